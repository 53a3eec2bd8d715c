//! [`StepLoss`]: a step's loss, read from the device only when someone needs its value.

use std::fmt;

/// A step's loss: a number already on the host, or a value still on the device.
///
/// Reading a device value waits for the step that computes it to finish, so the run loop
/// reads it late — while the next step runs — except where a strategy needs it at once
/// (the ring carries it with the gradients; a parameter server receives it with the push).
pub enum StepLoss {
    /// Already on the host.
    Known(f64),
    /// Still on the device: the closure reads it, waiting for the device if need be.
    OnDevice(Box<dyn FnOnce() -> f64 + Send>),
}

impl StepLoss {
    /// The loss, read from the device if it is still there.
    pub fn read(self) -> f64 {
        match self {
            StepLoss::Known(value) => value,
            StepLoss::OnDevice(read) => read(),
        }
    }

    /// Whether the value is on the host already (reading it costs nothing).
    pub fn is_known(&self) -> bool {
        matches!(self, StepLoss::Known(_))
    }

    /// The mean of `losses` (several batches' of one step), read from the device only when
    /// it is read.
    pub fn mean(losses: Vec<StepLoss>) -> StepLoss {
        let count = losses.len().max(1) as f64;
        if losses.iter().all(StepLoss::is_known) {
            let sum: f64 = losses.into_iter().map(StepLoss::read).sum();
            return StepLoss::Known(sum / count);
        }
        StepLoss::OnDevice(Box::new(move || {
            losses.into_iter().map(StepLoss::read).sum::<f64>() / count
        }))
    }
}

impl fmt::Debug for StepLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepLoss::Known(value) => write!(f, "Known({value})"),
            StepLoss::OnDevice(_) => f.write_str("OnDevice"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_of_several_losses_is_read_when_wanted() {
        let known = StepLoss::mean(vec![StepLoss::Known(1.0), StepLoss::Known(4.0)]);
        assert!(known.is_known());
        assert_eq!(known.read(), 2.5);
        let mixed = StepLoss::mean(vec![
            StepLoss::Known(1.0),
            StepLoss::OnDevice(Box::new(|| 2.0)),
            StepLoss::OnDevice(Box::new(|| 6.0)),
        ]);
        assert!(!mixed.is_known());
        assert_eq!(mixed.read(), 3.0);
    }
}
