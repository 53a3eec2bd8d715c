//! Checkpoint listeners: code run right after the chief saves a checkpoint (TF's
//! `CheckpointSaverListener`), e.g. to evaluate each checkpoint as it is written.

use std::path::Path;

use datasets::Dataset;

use super::train::train_with_listener;
use crate::distribute::Strategy;
use crate::error::Result;
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};

/// Called with the file and the global step of every checkpoint the chief saves, the final
/// one included, before training goes on. An error ends training with that error.
///
/// `Send` because a Mirrored chief trains in a thread of its own.
pub type CheckpointListener<'a> = dyn FnMut(&Path, u64) -> Result<()> + Send + 'a;

/// Trains like [`train`](fn@super::train), calling `listener` after every checkpoint saved by
/// this process (only the chief of a cluster saves, so only its listener is called).
pub fn train_listening<E: Estimator, D: Dataset<Item = E::Batch>>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    listener: &mut CheckpointListener<'_>,
) -> Result<TrainOutcome> {
    let strategy = Strategy::from_run_config(estimator.run_config())?;
    train_with_listener(estimator, dataset, spec, strategy, Some(listener))
}
