//! What a process runs, for its role in the cluster: training, evaluation, prediction and
//! export of an estimator ([`EstimatorExt`]), `train_and_evaluate` (each task its part),
//! serving variables as a ps task, each task's role ([`TaskRole`]) and one call that plays
//! it ([`training_task`]), and a program's `main` ([`main`]: logging, exit codes).

mod connect;
mod estimator_ext;
mod program;
mod serve_parameters;
mod task_role;
mod train_and_evaluate;
mod training_task;

pub use estimator_ext::EstimatorExt;
pub use program::main;
pub use serve_parameters::{serve_parameters, serve_parameters_in};
pub use task_role::TaskRole;
pub use train_and_evaluate::{train_and_evaluate, train_and_evaluate_in, TrainAndEvaluateOutcome};
pub use training_task::{train_and_evaluate_task, training_task, TaskOutcome};
