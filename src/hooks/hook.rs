//! The `Hook` trait: policies that watch the run loop and return what it should do.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Control;
use crate::error::Result;

/// What a hook is told when training begins.
#[derive(Debug, Clone)]
pub struct RunStart<'a> {
    /// The global step training starts from (after a restore).
    pub global_step: u64,
    /// The global step training stops at, unless a hook stops it first.
    pub last_step: u64,
    /// The estimator's model directory.
    pub model_dir: &'a Path,
    /// When training began.
    pub now: Instant,
}

/// What a hook is told after each step.
#[derive(Debug, Clone, Copy)]
pub struct StepInfo {
    /// The global step just completed (1 after the first step).
    pub global_step: u64,
    /// The latest training loss read back from the device: the loss of step `loss_step`.
    pub loss: f64,
    /// The global step whose loss `loss` is: `global_step` on the first and last steps and
    /// on steps where the loss is logged, summarised or checkpointed (and always on
    /// strategies that exchange the loss); otherwise an earlier step, usually the one
    /// before, because reading a step's loss at once would wait for the device.
    pub loss_step: u64,
    /// When the step finished.
    pub now: Instant,
    /// How long the step took.
    pub duration: Duration,
}

/// What a hook is told when training ends, successfully or not.
#[derive(Debug, Clone)]
pub struct RunEnd<'a> {
    /// The last completed global step.
    pub global_step: u64,
    /// The error that ended training, if any.
    pub error: Option<&'a str>,
}

/// Output a hook asks the loop to write: log lines and TensorBoard scalars.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Emit {
    /// Lines for the log.
    pub logs: Vec<String>,
    /// `(tag, value)` scalars for the train summary directory, at the current step.
    pub scalars: Vec<(String, f64)>,
}

impl Emit {
    /// Asks the loop to log `line`.
    pub fn log(&mut self, line: impl Into<String>) {
        self.logs.push(line.into());
    }

    /// Asks the loop to write scalar `tag` = `value` at the current step.
    pub fn scalar(&mut self, tag: impl Into<String>, value: f64) {
        self.scalars.push((tag.into(), value));
    }
}

/// A training hook (TF's `SessionRunHook`): decides, the loop acts.
///
/// Hooks do no I/O of their own where it can be avoided: they return [`Control`] and
/// [`Emit`] output, so they are tested with plain values and synthetic clocks.
pub trait Hook: Send {
    /// Name used in errors and logs.
    fn name(&self) -> &str;

    /// Called once before the first step.
    fn begin(&mut self, _start: &RunStart<'_>) -> Result<()> {
        Ok(())
    }

    /// Called before each step with the global step about to run.
    fn before_step(&mut self, _global_step: u64) -> Result<()> {
        Ok(())
    }

    /// Called after each step; an error stops training (and `end` still runs).
    fn after_step(&mut self, step: &StepInfo, emit: &mut Emit) -> Result<Control>;

    /// Called once when training ends, also when it ends with an error.
    fn end(&mut self, _end: &RunEnd<'_>) -> Result<()> {
        Ok(())
    }
}
