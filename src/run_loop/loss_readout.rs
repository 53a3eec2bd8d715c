//! When the run loop reads a step's loss back from the device.
//!
//! Reading a loss waits for its step to finish: read right after the step, it stalls the
//! host until the device has drained, and the device then idles while the host prepares
//! the next step. So the loop reads each loss one step late — step t's while step t+1 is
//! queued — except on the steps where it is logged, summarised or checkpointed, and on the
//! first and last steps, where it reads the step's own loss at once. With
//! [`LossReadback::WhenWanted`] it reads only those.

use crate::distribute::StepLoss;
use crate::estimator::LossReadback;

/// The losses of recent steps: the latest read, and the one still on the device.
pub(super) struct LossReadout {
    readback: LossReadback,
    /// The latest loss read: `(global step, value)`.
    latest: Option<(u64, f64)>,
    /// The last step's loss, not read yet.
    pending: Option<(u64, StepLoss)>,
}

impl LossReadout {
    /// Reads back every step's loss or only the wanted ones, as `readback` says once
    /// [`LossReadback::on`] has resolved `Auto` for the device.
    pub fn new(readback: LossReadback) -> Self {
        debug_assert_ne!(
            readback,
            LossReadback::Auto,
            "resolved for the device first"
        );
        LossReadout {
            readback,
            latest: None,
            pending: None,
        }
    }

    /// Takes the loss of `step`; returns the loss to report now and the step it belongs to:
    /// `step`'s own when `wanted_now` (or when it costs nothing), else the latest read.
    pub fn after_step(&mut self, step: u64, loss: StepLoss, wanted_now: bool) -> (u64, f64) {
        if wanted_now || loss.is_known() || self.latest.is_none() {
            self.pending = None;
            return *self.latest.insert((step, loss.read()));
        }
        let previous = self.pending.replace((step, loss));
        if let (LossReadback::EveryStep, Some((previous, value))) = (self.readback, previous) {
            self.latest = Some((previous, value.read()));
        }
        self.latest.expect("set before any step is left pending")
    }

    /// The loss of the last step taken, reading it if it is still on the device.
    pub fn last(&mut self) -> Option<f64> {
        if let Some((step, loss)) = self.pending.take() {
            self.latest = Some((step, loss.read()));
        }
        self.latest.map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// A loss on the "device" that counts how often it is read.
    fn on_device(value: f64, reads: &Arc<AtomicUsize>) -> StepLoss {
        let reads = reads.clone();
        StepLoss::OnDevice(Box::new(move || {
            reads.fetch_add(1, Ordering::SeqCst);
            value
        }))
    }

    #[test]
    fn losses_are_read_one_step_late_except_where_wanted() {
        let reads = Arc::new(AtomicUsize::new(0));
        let mut readout = LossReadout::new(LossReadback::EveryStep);
        // The first step has nothing earlier to report: read at once.
        assert_eq!(
            readout.after_step(1, on_device(1.0, &reads), false),
            (1, 1.0)
        );
        // Step 2 is left on the device; step 1's value is reported again.
        assert_eq!(
            readout.after_step(2, on_device(2.0, &reads), false),
            (1, 1.0)
        );
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // Step 3 is queued: step 2's is read now.
        assert_eq!(
            readout.after_step(3, on_device(3.0, &reads), false),
            (2, 2.0)
        );
        // A logging step reads its own loss and forgets the pending one.
        assert_eq!(
            readout.after_step(4, on_device(4.0, &reads), true),
            (4, 4.0)
        );
        assert_eq!(
            reads.load(Ordering::SeqCst),
            3,
            "step 3's loss was never needed"
        );
        assert_eq!(
            readout.after_step(5, on_device(5.0, &reads), false),
            (4, 4.0)
        );
        // The end of training reads the last step's loss.
        assert_eq!(readout.last(), Some(5.0));
        assert_eq!(readout.last(), Some(5.0));
        assert_eq!(reads.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn when_wanted_only_the_losses_wanted_are_read() {
        let reads = Arc::new(AtomicUsize::new(0));
        let mut readout = LossReadout::new(LossReadback::WhenWanted);
        // The first step is read at once: there is nothing earlier to report.
        assert_eq!(
            readout.after_step(1, on_device(1.0, &reads), false),
            (1, 1.0)
        );
        for step in 2..=9 {
            assert_eq!(
                readout.after_step(step, on_device(step as f64, &reads), false),
                (1, 1.0)
            );
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1, "steps 2-9 never read");
        assert_eq!(
            readout.after_step(10, on_device(10.0, &reads), true),
            (10, 10.0)
        );
        assert_eq!(
            readout.after_step(11, on_device(11.0, &reads), false),
            (10, 10.0)
        );
        // The end of training reads the last step's loss.
        assert_eq!(readout.last(), Some(11.0));
        assert_eq!(reads.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_loss_already_on_the_host_is_reported_at_its_own_step() {
        let mut readout = LossReadout::new(LossReadback::EveryStep);
        assert_eq!(readout.after_step(7, StepLoss::Known(0.5), false), (7, 0.5));
        assert_eq!(
            readout.after_step(8, StepLoss::Known(0.25), false),
            (8, 0.25)
        );
        assert_eq!(readout.last(), Some(0.25));
        assert_eq!(LossReadout::new(LossReadback::EveryStep).last(), None);
    }
}
