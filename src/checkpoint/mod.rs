//! Checkpoint storage: one self-checking file per checkpoint, a JSON index, retention and recovery.
//!
//! This module knows nothing of Burn: a [`Checkpoint`] is a global step, caller-defined JSON
//! metadata and named opaque byte sections. The [`CheckpointManager`] writes them atomically into
//! `model_dir` as `ckpt-{global_step}.ckpt`, keeps the index file `model_dir/checkpoint` up to
//! date, deletes old checkpoints, and on resume falls back past corrupt or half-written files.

mod file;
mod index;
mod manager;
mod naming;
mod retention;

pub use file::{Checkpoint, FORMAT_VERSION, MAGIC};
pub use index::{CheckpointIndex, IndexError, INDEX_FILE_NAME};
pub use manager::CheckpointManager;
pub use naming::{checkpoint_file_name, checkpoint_path, parse_checkpoint_file_name};
pub use retention::checkpoints_to_delete;
