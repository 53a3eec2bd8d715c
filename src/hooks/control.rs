//! What a hook asks the run loop to do after a step.

/// A hook's verdict after a step; the loop combines the verdicts of all hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Control {
    /// Carry on.
    #[default]
    Continue,
    /// Write a checkpoint now, then carry on.
    SaveNow,
    /// Stop training after this step (a final checkpoint is written).
    Stop,
}

/// The combined verdicts of every hook for one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CombinedControl {
    /// Some hook asked for a checkpoint.
    pub save: bool,
    /// Some hook asked to stop.
    pub stop: bool,
}

impl CombinedControl {
    /// Folds one hook's [`Control`] into the verdict.
    pub fn add(&mut self, control: Control) {
        match control {
            Control::Continue => {}
            Control::SaveNow => self.save = true,
            Control::Stop => self.stop = true,
        }
    }
}
