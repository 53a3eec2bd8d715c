//! Reports `global_step/sec` every N steps, as TF's StepCounterHook.

use std::time::Instant;

use super::hook::{Emit, Hook, RunStart, StepInfo};
use super::Control;
use crate::error::Result;

/// Emits the `global_step/sec` scalar (and a log line) every `every_n_steps` steps.
#[derive(Debug)]
pub struct StepCounterHook {
    every_n_steps: u64,
    last: Option<(u64, Instant)>,
}

impl StepCounterHook {
    /// Reports every `every_n_steps` steps.
    pub fn new(every_n_steps: u64) -> Self {
        Self {
            every_n_steps: every_n_steps.max(1),
            last: None,
        }
    }
}

impl Hook for StepCounterHook {
    fn name(&self) -> &str {
        "step_counter"
    }

    fn begin(&mut self, start: &RunStart<'_>) -> Result<()> {
        self.last = Some((start.global_step, start.now));
        Ok(())
    }

    fn after_step(&mut self, step: &StepInfo, emit: &mut Emit) -> Result<Control> {
        if !step.global_step.is_multiple_of(self.every_n_steps) {
            return Ok(Control::Continue);
        }
        if let Some((last_step, last_time)) = self.last {
            let secs = (step.now - last_time).as_secs_f64();
            if secs > 0.0 && step.global_step > last_step {
                let rate = (step.global_step - last_step) as f64 / secs;
                emit.scalar("global_step/sec", rate);
                emit.log(format!("global_step/sec: {rate:.4}"));
            }
        }
        self.last = Some((step.global_step, step.now));
        Ok(Control::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn rate_is_steps_over_seconds_since_the_last_report() {
        let t0 = Instant::now();
        let mut hook = StepCounterHook::new(10);
        let start = RunStart {
            global_step: 100,
            last_step: 200,
            model_dir: Path::new("m"),
            now: t0,
        };
        hook.begin(&start).unwrap();
        let mut emit = Emit::default();
        let info = StepInfo {
            global_step: 110,
            loss_step: 110,
            loss: 1.0,
            now: t0 + Duration::from_secs(2),
            duration: Duration::ZERO,
        };
        hook.after_step(&info, &mut emit).unwrap();
        // 10 steps in 2 s.
        assert_eq!(emit.scalars, vec![("global_step/sec".to_string(), 5.0)]);
    }
}
