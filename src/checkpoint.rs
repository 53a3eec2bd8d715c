//! Checkpoint storage: one self-checking file per checkpoint, a JSON index, retention and recovery.
//!
//! Storage knows nothing of Burn: a [`Checkpoint`] is a global step, caller-defined JSON
//! metadata and named opaque byte sections. The [`CheckpointManager`] writes them atomically into
//! `model_dir` as `ckpt-{global_step}.ckpt`, keeps the index file `model_dir/checkpoint` up to
//! date, deletes old checkpoints, and on resume falls back past corrupt or half-written files.
//! On top of it: what a training checkpoint holds (`contents`: weights, optimizer state,
//! input position), when one is due ([`CheckpointSchedule`]), restoring a model for
//! inference, and the listeners called after each save.

mod cadence;
pub(crate) mod contents;
mod file;
mod index;
mod index_fault;
mod listener;
mod manager;
mod naming;
mod restore;
mod retention;
mod variables;
mod vocab_info;
mod warm_start;

pub use cadence::{CheckpointEvery, CheckpointSchedule};
pub use contents::{MODEL_SECTION, OPTIMIZER_SECTION};
pub use file::{Checkpoint, FORMAT_VERSION, MAGIC};
pub use index::{CheckpointIndex, INDEX_FILE_NAME};
pub use index_fault::IndexFault;
pub use listener::CheckpointListener;
pub use manager::CheckpointManager;
pub use naming::{checkpoint_file_name, checkpoint_path, parse_checkpoint_file_name};
pub(crate) use restore::{restore_for_inference, RestoredModel};
pub use retention::{prune, Pruning, Retention};
pub use variables::{list_variables, load_variable, VariableValue};
pub use vocab_info::VocabInfo;
pub use warm_start::{VarsToWarmStart, WarmStartSettings};
