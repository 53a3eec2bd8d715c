//! The run loop: training, evaluation and prediction over a dataset, and the evaluator
//! that evaluates checkpoints as training writes them.

mod checkpointing;
mod control;
mod eval_history;
mod evaluate;
mod evaluations;
mod evaluator;
mod input;
mod listener;
mod mirrored;
mod pin;
mod predict;
mod progress;
mod ps_session;
mod ps_task;
mod replica_sync;
mod restore;
mod seeding;
mod train;
mod train_finished;

pub use checkpointing::{CheckpointSchedule, MODEL_SECTION, OPTIMIZER_SECTION};
pub use control::{Control, Verdict};
pub use eval_history::{EvalHistory, EvalRecord};
pub use evaluate::{eval_dir, evaluate};
pub(crate) use evaluations::Evaluations;
pub use evaluator::{run_evaluator, POLL_INTERVAL};
pub use listener::{train_listening, CheckpointListener};
pub use pin::{PinnedCheckpoint, PINNED_DIR};
pub use predict::predict;
pub use ps_task::{serve_parameters, serve_parameters_in};
pub use restore::{restore_for_inference, RestoredModel};
pub use seeding::{build_seeded, replica_seed, step_seed, with_seed};
pub use train::{train, train_with};
pub use train_finished::{TrainFinished, TRAIN_FINISHED_FILE};
