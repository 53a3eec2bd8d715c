//! [`LossScale`]: TF's dynamic loss scaling for float16 training.

use serde::{Deserialize, Serialize};

/// TF's `LossScaleOptimizer` starts at 2^15: large enough that most float16 gradients are
/// far from underflow, and the first few overflowing steps bring it down quickly.
pub const INITIAL_LOSS_SCALE: f32 = 32768.0;
/// Finite steps in a row before the scale doubles (TF's `dynamic_growth_steps`).
pub const GROWTH_STEPS: u64 = 2000;
/// TF never halves below 1: a smaller scale would shrink gradients instead.
pub const MIN_LOSS_SCALE: f32 = 1.0;
/// 2^24: doubling further only brings the next overflow closer (float16's largest value
/// is 65504, so a loss this much larger already overflows unless it is tiny).
pub const MAX_LOSS_SCALE: f32 = 16_777_216.0;

/// What of a [`LossScale`] changes from step to step, as checkpoints keep it: resuming
/// from it continues exactly where the run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScaleState {
    /// The factor the loss is multiplied by before the backward pass.
    pub scale: f32,
    /// Finite steps since the scale last changed.
    pub good_steps: u64,
    /// Steps whose update was skipped (non-finite gradients) over the whole run.
    pub skipped_steps: u64,
}

/// Dynamic loss scaling (TF's `LossScaleOptimizer`): the loss is multiplied by the scale
/// before the backward pass and the gradients divided by it after; a step with a NaN or
/// infinite gradient is not applied and halves the scale, and every
/// [`growth_steps`](LossScale::with_growth_steps) finite steps in a row double it, within
/// `[min, max]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LossScale {
    state: LossScaleState,
    growth_steps: u64,
    min: f32,
    max: f32,
}

impl Default for LossScale {
    fn default() -> Self {
        Self {
            state: LossScaleState {
                scale: INITIAL_LOSS_SCALE,
                good_steps: 0,
                skipped_steps: 0,
            },
            growth_steps: GROWTH_STEPS,
            min: MIN_LOSS_SCALE,
            max: MAX_LOSS_SCALE,
        }
    }
}

impl LossScale {
    /// TF's defaults: 2^15, doubled after 2000 finite steps, within `[1, 2^24]`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from `scale` (clamped to the bounds).
    pub fn with_initial_scale(mut self, scale: f32) -> Self {
        self.state.scale = scale.clamp(self.min, self.max);
        self
    }

    /// Doubles the scale after `steps` finite steps in a row (at least 1).
    pub fn with_growth_steps(mut self, steps: u64) -> Self {
        self.growth_steps = steps.max(1);
        self
    }

    /// Keeps the scale within `[min, max]` (`min` at least 1, `max` at least `min`).
    pub fn with_bounds(mut self, min: f32, max: f32) -> Self {
        self.min = min.max(1.0);
        self.max = max.max(self.min);
        self.state.scale = self.state.scale.clamp(self.min, self.max);
        self
    }

    /// The factor the next step's loss is multiplied by.
    pub fn scale(&self) -> f32 {
        self.state.scale
    }

    /// Steps skipped so far.
    pub fn skipped_steps(&self) -> u64 {
        self.state.skipped_steps
    }

    /// The state a checkpoint keeps.
    pub fn state(&self) -> LossScaleState {
        self.state
    }

    /// Continues from a checkpoint's `state` (its scale clamped to this one's bounds).
    pub fn restore(&mut self, state: LossScaleState) {
        self.state = state;
        self.state.scale = state.scale.clamp(self.min, self.max);
    }

    /// Records a step whose gradients were all `finite` (or not); whether to apply it.
    pub fn update(&mut self, finite: bool) -> bool {
        let s = &mut self.state;
        // Saturating: a restored checkpoint's counters may stand at their maximum.
        if finite {
            s.good_steps = s.good_steps.saturating_add(1);
            if s.good_steps >= self.growth_steps {
                s.scale = (s.scale * 2.0).min(self.max);
                s.good_steps = 0;
            }
        } else {
            s.scale = (s.scale / 2.0).max(self.min);
            s.good_steps = 0;
            s.skipped_steps = s.skipped_steps.saturating_add(1);
        }
        finite
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_step_is_skipped_and_halves_the_scale() {
        let mut scale = LossScale::new().with_growth_steps(3);
        assert_eq!(scale.scale(), 32768.0);
        assert!(scale.update(true));
        assert!(!scale.update(false));
        assert_eq!(scale.scale(), 16384.0);
        assert_eq!(scale.skipped_steps(), 1);
        // The finite step before the skip no longer counts towards growth.
        assert!(scale.update(true));
        assert!(scale.update(true));
        assert_eq!(scale.scale(), 16384.0);
        assert!(scale.update(true));
        assert_eq!(scale.scale(), 32768.0);
        assert_eq!(scale.state().good_steps, 0);
    }

    #[test]
    fn the_scale_grows_after_n_good_steps_as_tf_and_stays_within_bounds() {
        let mut scale = LossScale::new();
        for _ in 0..GROWTH_STEPS - 1 {
            scale.update(true);
        }
        assert_eq!(scale.scale(), INITIAL_LOSS_SCALE);
        scale.update(true);
        assert_eq!(scale.scale(), 2.0 * INITIAL_LOSS_SCALE);

        let mut scale = LossScale::new().with_growth_steps(1).with_bounds(2.0, 8.0);
        assert_eq!(scale.scale(), 8.0, "clamped to the maximum");
        scale.update(true);
        assert_eq!(scale.scale(), 8.0);
        for _ in 0..5 {
            scale.update(false);
        }
        assert_eq!(scale.scale(), 2.0);
        assert_eq!(scale.skipped_steps(), 5);
        assert_eq!(LossScale::new().with_bounds(0.0, 0.5).scale(), 1.0);
    }

    #[test]
    fn the_state_round_trips_and_restores_within_bounds() {
        let mut scale = LossScale::new().with_growth_steps(4);
        scale.update(false);
        scale.update(true);
        let json = serde_json::to_value(scale.state()).unwrap();
        let mut resumed = LossScale::new().with_growth_steps(4);
        resumed.restore(serde_json::from_value(json).unwrap());
        assert_eq!(resumed, scale);
        let mut bounded = LossScale::new().with_bounds(1.0, 64.0);
        bounded.restore(scale.state());
        assert_eq!(bounded.scale(), 64.0);
    }

    #[test]
    fn counters_restored_at_their_maximum_do_not_overflow() {
        let mut scale = LossScale::new();
        scale.restore(LossScaleState {
            scale: 2.0,
            good_steps: u64::MAX,
            skipped_steps: u64::MAX,
        });
        assert!(scale.update(true));
        assert_eq!((scale.scale(), scale.state().good_steps), (4.0, 0));
        assert!(!scale.update(false));
        assert_eq!(scale.skipped_steps(), u64::MAX);
    }
}
