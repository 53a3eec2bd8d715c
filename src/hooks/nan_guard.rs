//! Stops training with an error when the loss is NaN or infinite (TF's NanTensorHook).

use super::hook::{Emit, Hook, StepInfo};
use super::Control;
use crate::error::{Error, Result};

/// Fails the run at the first step whose loss is not finite (the step it is told about
/// with the loss, [`StepInfo::loss_step`]).
#[derive(Debug, Default)]
pub struct NanGuardHook;

impl Hook for NanGuardHook {
    fn name(&self) -> &str {
        "nan_guard"
    }

    fn after_step(&mut self, step: &StepInfo, _emit: &mut Emit) -> Result<Control> {
        if step.loss.is_finite() {
            Ok(Control::Continue)
        } else {
            Err(Error::NonFiniteLoss {
                step: step.loss_step,
                value: step.loss,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn names_the_step_of_a_nan_or_inf_loss() {
        let mut hook = NanGuardHook;
        let at = |s, loss| StepInfo {
            global_step: s,
            loss_step: s,
            loss,
            now: Instant::now(),
            duration: Duration::ZERO,
        };
        let mut emit = Emit::default();
        assert_eq!(
            hook.after_step(&at(1, 0.3), &mut emit).unwrap(),
            Control::Continue
        );
        let err = hook.after_step(&at(7, f64::NAN), &mut emit).unwrap_err();
        assert!(err.to_string().contains("step 7"), "{err}");
        assert!(hook.after_step(&at(8, f64::INFINITY), &mut emit).is_err());
    }
}
