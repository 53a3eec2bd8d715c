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
}

impl fmt::Debug for StepLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepLoss::Known(value) => write!(f, "Known({value})"),
            StepLoss::OnDevice(_) => f.write_str("OnDevice"),
        }
    }
}
