//! How long to train and with which extra hooks.

use std::fmt;
use std::path::PathBuf;

use crate::distribute::CommStats;
use crate::hooks::Hook;

/// When training stops (TF's `steps` vs `max_steps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepLimit {
    /// Train this many more steps beyond the current global step.
    Steps(u64),
    /// Train until the global step reaches this absolute value.
    MaxSteps(u64),
    /// Train until the input is exhausted.
    UntilInputEnds,
}

impl StepLimit {
    /// The global step to stop at, given the step training starts from.
    pub fn last_step(self, global_step: u64) -> u64 {
        match self {
            StepLimit::Steps(n) => global_step.saturating_add(n),
            StepLimit::MaxSteps(n) => n,
            StepLimit::UntilInputEnds => u64::MAX,
        }
    }
}

/// What one call to `train` should do.
pub struct TrainSpec {
    /// When to stop.
    pub limit: StepLimit,
    /// Extra hooks, run after the built-in ones.
    pub hooks: Vec<Box<dyn Hook>>,
    /// Continue the input pipeline from the position saved in the checkpoint (default true).
    pub resume_input: bool,
    /// In a multi-worker cluster, give each worker every n-th batch of the input (TF's
    /// auto-sharding; default true). Turn it off when the input function already reads
    /// only this worker's share.
    pub auto_shard: bool,
    /// On SIGTERM or SIGINT, end the step under way, save a checkpoint there and return
    /// [`Error::Terminated`](crate::Error::Terminated) (TF's `PreemptionCheckpointHandler`;
    /// default false). Replicas in step stop at the same step, whichever of them received
    /// it; a second signal terminates at once. The handlers stay registered for the rest of
    /// the process, acting as if absent outside a run that asked for them. A signal the
    /// program already handles (its own handler, tokio's) is only watched: that handler
    /// still decides what else happens.
    pub stop_on_signals: bool,
}

impl TrainSpec {
    /// Train `steps` more steps (TF's `steps`).
    pub fn steps(steps: u64) -> Self {
        Self::new(StepLimit::Steps(steps))
    }

    /// Train until global step `max_steps` (TF's `max_steps`).
    pub fn max_steps(max_steps: u64) -> Self {
        Self::new(StepLimit::MaxSteps(max_steps))
    }

    /// Train until the input is exhausted.
    pub fn until_input_ends() -> Self {
        Self::new(StepLimit::UntilInputEnds)
    }

    fn new(limit: StepLimit) -> Self {
        Self {
            limit,
            hooks: Vec::new(),
            resume_input: true,
            auto_shard: true,
            stop_on_signals: false,
        }
    }

    /// Adds a hook.
    pub fn with_hook(mut self, hook: impl Hook + 'static) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// Whether each worker of a cluster takes every n-th batch of the input (see
    /// [`TrainSpec::auto_shard`]).
    pub fn with_auto_shard(mut self, auto_shard: bool) -> Self {
        self.auto_shard = auto_shard;
        self
    }

    /// Whether SIGTERM and SIGINT stop training with a checkpoint (see
    /// [`TrainSpec::stop_on_signals`]).
    pub fn with_stop_on_signals(mut self, stop: bool) -> Self {
        self.stop_on_signals = stop;
        self
    }

    /// Restart the input from its beginning instead of the checkpoint's position.
    pub fn with_resume_input(mut self, resume: bool) -> Self {
        self.resume_input = resume;
        self
    }
}

impl fmt::Debug for TrainSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hooks: Vec<&str> = self.hooks.iter().map(|h| h.name()).collect();
        f.debug_struct("TrainSpec")
            .field("limit", &self.limit)
            .field("hooks", &hooks)
            .field("resume_input", &self.resume_input)
            .field("auto_shard", &self.auto_shard)
            .field("stop_on_signals", &self.stop_on_signals)
            .finish()
    }
}

/// What a call to `train` did (all zero for a task that does not train: a ps or an
/// evaluator task).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainOutcome {
    /// The global step when training stopped.
    pub global_step: u64,
    /// Steps this task ran in this call (updates it computed that were applied).
    pub steps_run: u64,
    /// How far the global step advanced during this call: `steps_run` for one process and
    /// for synchronous replicas, more with parameter servers (other workers' pushes count).
    pub global_steps_run: u64,
    /// Loss of the last step run by this call.
    pub last_loss: Option<f64>,
    /// The checkpoint holding the final state (on the chief).
    pub checkpoint: Option<PathBuf>,
    /// CRC-32C of the final weights (as safetensors bytes): equal on every replica of a
    /// distributed run, which checks this before returning.
    pub weights_crc32c: Option<u32>,
    /// What averaging gradients with the other replicas cost over the run (synchronous
    /// strategies only): per-stage seconds summed over its steps.
    pub comm: Option<CommStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_relative_and_max_steps_absolute() {
        assert_eq!(StepLimit::Steps(100).last_step(250), 350);
        assert_eq!(StepLimit::MaxSteps(100).last_step(250), 100);
        assert_eq!(StepLimit::UntilInputEnds.last_step(5), u64::MAX);
    }
}
