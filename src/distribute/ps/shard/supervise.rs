//! The ps task's end: the job is done once the chief shut it down and the training tasks
//! left; it failed once the chief was silent too long and the training tasks heard of it.

use std::time::{Duration, Instant};

use super::machine::ShardPhase;
use super::{ShardFault, ShardMachine};

/// A gap between two checks this long means this task was not running: the supervising
/// loop checks several times a second.
pub(crate) const PAUSED_AFTER: Duration = Duration::from_secs(2);

/// How long the supervisor waits on the chief and the training tasks.
#[derive(Debug, Clone, Copy)]
pub struct Patience {
    /// Silence from the chief after which the job is failed.
    pub chief_timeout: Duration,
    /// The same before the chief's first call.
    pub startup_timeout: Duration,
    /// How long training tasks have to leave after a shutdown, or to be told of a failure.
    pub grace: Duration,
}

/// What the ps task's supervising loop should do next.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Keep serving.
    Serve,
    /// The chief shut the job down and the training tasks left (or had their grace): exit 0.
    Done,
    /// The job failed and the training tasks were told (or had their grace): exit ≥ 128.
    Failed(ShardFault),
}

impl ShardMachine {
    /// Checks on the chief and the job's end at `now`: fails the shard when the chief was
    /// silent too long, and says when the task should exit.
    pub fn supervise(&mut self, patience: Patience, now: Instant) -> Verdict {
        // A long gap since the last check means this task itself was not running (stopped,
        // swapped out): the chief could not reach it then, which is no silence of the
        // chief's.
        if let Some(last) = self.last_supervised.replace(now) {
            let paused = now.saturating_duration_since(last);
            if paused > PAUSED_AFTER {
                self.last_chief_call += paused;
            }
        }
        let training_tasks = 1..self.workers as u32;
        if let Some(since) = self.shutdown_since {
            let all_left = training_tasks.clone().all(|w| self.left.contains(&w));
            return if all_left || now.saturating_duration_since(since) >= patience.grace {
                Verdict::Done
            } else {
                Verdict::Serve
            };
        }
        if let ShardPhase::Failed { silent_for, since } = self.phase {
            let all_told = training_tasks
                .clone()
                .all(|w| self.told.contains(&w) || self.left.contains(&w));
            return if all_told || now.saturating_duration_since(since) >= patience.grace {
                Verdict::Failed(self.chief_lost(silent_for))
            } else {
                Verdict::Serve
            };
        }
        let limit = if self.chief_seen {
            patience.chief_timeout
        } else {
            patience.startup_timeout
        };
        let silent_for = now.saturating_duration_since(self.last_chief_call);
        if silent_for >= limit {
            self.phase = ShardPhase::Failed {
                silent_for,
                since: now,
            };
            self.changes += 1;
        }
        Verdict::Serve
    }
}
