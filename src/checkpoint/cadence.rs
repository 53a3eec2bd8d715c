//! When the next checkpoint is due: a pure policy over steps and a clock reading.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often to write checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointEvery {
    /// Every N global steps.
    Steps(u64),
    /// Whenever N seconds have passed since the last save.
    Secs(u64),
}

/// When the next checkpoint is due.
#[derive(Debug, Clone)]
pub struct CheckpointSchedule {
    every: CheckpointEvery,
    last_step: u64,
    last_time: Instant,
}

impl CheckpointSchedule {
    /// A schedule whose last save was at `step`, `now`.
    pub fn new(every: CheckpointEvery, step: u64, now: Instant) -> Self {
        Self {
            every,
            last_step: step,
            last_time: now,
        }
    }

    /// Whether a checkpoint is due at `step`, `now`.
    pub fn due(&self, step: u64, now: Instant) -> bool {
        match self.every {
            // A run_config.json may say "never" as u64::MAX steps.
            CheckpointEvery::Steps(n) => step >= self.last_step.saturating_add(n),
            CheckpointEvery::Secs(s) => {
                now.duration_since(self.last_time) >= Duration::from_secs(s)
            }
        }
    }

    /// Records a save at `step`, `now`.
    pub fn saved(&mut self, step: u64, now: Instant) {
        self.last_step = step;
        self.last_time = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_by_steps_and_by_seconds() {
        let t0 = Instant::now();
        let mut by_steps = CheckpointSchedule::new(CheckpointEvery::Steps(10), 0, t0);
        assert!(!by_steps.due(9, t0));
        assert!(by_steps.due(10, t0));
        by_steps.saved(10, t0);
        assert!(!by_steps.due(19, t0));
        let by_secs = CheckpointSchedule::new(CheckpointEvery::Secs(5), 0, t0);
        assert!(!by_secs.due(1000, t0 + Duration::from_secs(4)));
        assert!(by_secs.due(1, t0 + Duration::from_secs(5)));
    }

    #[test]
    fn a_cadence_of_u64_max_steps_is_never_due_after_a_resume() {
        let t0 = Instant::now();
        let never = CheckpointSchedule::new(CheckpointEvery::Steps(u64::MAX), 500, t0);
        assert!(!never.due(501, t0));
        assert!(!never.due(u64::MAX - 1, t0));
    }
}
