//! Stops training at a given global step, as TF's StopAtStepHook.

use super::hook::{Emit, Hook, StepInfo};
use super::Control;
use crate::error::Result;

/// Stops once the global step reaches `last_step`.
#[derive(Debug)]
pub struct StopAtStepHook {
    last_step: u64,
}

impl StopAtStepHook {
    /// Stops at global step `last_step`.
    pub fn new(last_step: u64) -> Self {
        Self { last_step }
    }
}

impl Hook for StopAtStepHook {
    fn name(&self) -> &str {
        "stop_at_step"
    }

    fn after_step(&mut self, step: &StepInfo, _emit: &mut Emit) -> Result<Control> {
        Ok(if step.global_step >= self.last_step {
            Control::Stop
        } else {
            Control::Continue
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn stops_exactly_at_the_last_step() {
        let mut hook = StopAtStepHook::new(3);
        let at = |s| StepInfo {
            global_step: s,
            loss_step: s,
            loss: 0.0,
            now: Instant::now(),
            duration: Duration::ZERO,
        };
        let mut emit = Emit::default();
        assert_eq!(
            hook.after_step(&at(2), &mut emit).unwrap(),
            Control::Continue
        );
        assert_eq!(hook.after_step(&at(3), &mut emit).unwrap(), Control::Stop);
    }
}
