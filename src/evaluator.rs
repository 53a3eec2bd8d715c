//! The evaluator task: evaluates each checkpoint the chief writes, once, and runs the
//! exporters (TF's evaluator of `train_and_evaluate`).
//!
//! - `watch`: the watch loop over the model directory;
//! - `evaluations`: one evaluation per checkpoint — pin, evaluate, record, export;
//! - [`PinnedCheckpoint`]: a checkpoint held against the chief's retention while it is read;
//! - [`TrainFinished`]: the chief's end-of-training marker, for a run that ends early.

mod evaluations;
mod pin;
mod train_finished;
mod watch;

pub(crate) use evaluations::Evaluations;
pub use pin::PinnedCheckpoint;
pub use train_finished::{TrainFinished, TRAIN_FINISHED_FILE};
pub use watch::{run_evaluator, POLL_INTERVAL};
