//! The run loop: training, evaluation and prediction over a dataset.

mod checkpointing;
mod control;
mod eval_history;
mod evaluate;
mod input;
mod listener;
mod mirrored;
mod predict;
mod progress;
mod replica_sync;
mod restore;
mod seeding;
mod train;

pub use checkpointing::{CheckpointSchedule, MODEL_SECTION, OPTIMIZER_SECTION};
pub use control::{Control, Verdict};
pub use eval_history::{EvalHistory, EvalRecord};
pub use evaluate::{eval_dir, evaluate};
pub use listener::{train_listening, CheckpointListener};
pub use predict::predict;
pub use restore::{restore_for_inference, RestoredModel};
pub use seeding::{build_seeded, replica_seed, step_seed, with_seed};
pub use train::{train, train_with};
