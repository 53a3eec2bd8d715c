//! Checkpoint listeners: code run right after the chief saves a checkpoint (TF's
//! `CheckpointSaverListener`), e.g. to evaluate each checkpoint as it is written.

use std::path::Path;

use crate::error::Result;

/// Called with the file and the global step of every checkpoint the chief saves, the final
/// one included, before training goes on. An error ends training with that error.
///
/// `Send` because a Mirrored chief trains in a thread of its own.
pub type CheckpointListener<'a> = dyn FnMut(&Path, u64) -> Result<()> + Send + 'a;
