//! Logs `loss = …, step = … (x.xxx sec)` every N steps, as TF's LoggingTensorHook.

use std::time::Instant;

use super::hook::{Emit, Hook, RunStart, StepInfo};
use super::Control;
use crate::error::Result;

/// Logs the loss every `every_n_steps` steps with the time since the previous log line.
#[derive(Debug)]
pub struct LoggingHook {
    every_n_steps: u64,
    last: Option<Instant>,
}

impl LoggingHook {
    /// Logs every `every_n_steps` steps (and at the first step).
    pub fn new(every_n_steps: u64) -> Self {
        Self {
            every_n_steps: every_n_steps.max(1),
            last: None,
        }
    }
}

impl Hook for LoggingHook {
    fn name(&self) -> &str {
        "logging"
    }

    fn begin(&mut self, start: &RunStart<'_>) -> Result<()> {
        self.last = Some(start.now);
        Ok(())
    }

    fn after_step(&mut self, step: &StepInfo, emit: &mut Emit) -> Result<Control> {
        let first = self.last.is_none();
        if first || step.global_step.is_multiple_of(self.every_n_steps) {
            let secs = self
                .last
                .map(|t| (step.now - t).as_secs_f64())
                .unwrap_or(0.0);
            emit.log(format!(
                "loss = {}, step = {} ({secs:.3} sec)",
                step.loss, step.global_step
            ));
            self.last = Some(step.now);
        }
        Ok(Control::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn logs_every_n_steps_with_elapsed_time() {
        let t0 = Instant::now();
        let mut hook = LoggingHook::new(2);
        let start = RunStart {
            global_step: 0,
            last_step: 10,
            model_dir: Path::new("m"),
            now: t0,
        };
        hook.begin(&start).unwrap();
        let mut emit = Emit::default();
        for s in 1..=4u64 {
            let info = StepInfo {
                global_step: s,
                loss_step: s,
                loss: 0.5,
                now: t0 + Duration::from_millis(250 * s),
                duration: Duration::from_millis(250),
            };
            hook.after_step(&info, &mut emit).unwrap();
        }
        assert_eq!(
            emit.logs,
            vec![
                "loss = 0.5, step = 2 (0.500 sec)",
                "loss = 0.5, step = 4 (0.500 sec)"
            ]
        );
    }
}
