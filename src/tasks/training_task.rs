//! A training program's task, whatever its role: one call that trains, serves variables or
//! evaluates as the cluster assigns, and says what this task did, so that a program reports
//! its part without deciding roles itself.

use std::collections::BTreeMap;

use datasets::Dataset;

use super::connect::strategy_for;
use super::serve_parameters::serve_parameters_in;
use super::task_role::TaskRole;
use super::train_and_evaluate::train_and_evaluate_in;
use crate::cluster::ClusterConfig;
use crate::error::Result;
use crate::estimator::{Estimator, EvalSpec, TrainOutcome, TrainSpec};
use crate::evaluator::Evaluations;
use crate::run_loop;

/// What this task's part of a training job did.
#[derive(Debug)]
pub enum TaskOutcome {
    /// A ps task served its variables until the chief ended the job.
    ServedParameters,
    /// The evaluator task of [`train_and_evaluate_task`] evaluated every checkpoint; the
    /// last evaluation's metrics.
    Evaluated(BTreeMap<String, f64>),
    /// A training task (or an evaluator asked only to train, which has nothing to do).
    Trained {
        /// The training it did.
        outcome: TrainOutcome,
        /// The last evaluation's metrics, where this process evaluated (a local
        /// train-and-evaluate, or the chief of a cluster without an evaluator task).
        metrics: Option<BTreeMap<String, f64>>,
        /// Whether this task should evaluate the final model itself: the chief of
        /// [`training_task`], which evaluates nothing.
        evaluate_final_model: bool,
    },
}

/// Trains as [`EstimatorExt::train`](super::EstimatorExt::train) does for every task of a
/// cluster, reporting which part this task played.
pub fn training_task<E, D, F>(estimator: &E, input_fn: F, spec: TrainSpec) -> Result<TaskOutcome>
where
    E: Estimator,
    F: FnOnce() -> std::result::Result<D, datasets::Error>,
    D: Dataset<Item = E::Batch> + Send,
{
    let config = estimator.run_config();
    let cluster = config.resolve_cluster()?;
    let role = TaskRole::of(&cluster)?;
    let outcome = match role {
        TaskRole::ParameterServer => {
            serve_parameters_in(&cluster, estimator)?;
            return Ok(TaskOutcome::ServedParameters);
        }
        TaskRole::Evaluator => {
            tracing::info!(
                "evaluator task: nothing to train (train_and_evaluate evaluates checkpoints)"
            );
            TrainOutcome::default()
        }
        TaskRole::Trainer { .. } => {
            let strategy = strategy_for(config, &cluster)?;
            run_loop::train(estimator, input_fn()?, spec, strategy, None)?
        }
    };
    Ok(TaskOutcome::Trained {
        outcome,
        metrics: None,
        evaluate_final_model: role.is_chief(),
    })
}

/// [`train_and_evaluate`](super::train_and_evaluate) for this task, reporting which part
/// it played. The chief of a cluster without an evaluator task evaluates the final model
/// itself, as an evaluator's last evaluation (summaries, history, and every exporter of
/// `eval_spec`, the final ones included), where TF would evaluate and export nothing.
pub fn train_and_evaluate_task<E, TD, TF, ED, EF>(
    estimator: &E,
    train_input_fn: TF,
    train_spec: TrainSpec,
    eval_input_fn: EF,
    eval_spec: EvalSpec,
) -> Result<TaskOutcome>
where
    E: Estimator,
    TD: Dataset<Item = E::Batch> + Send,
    TF: Fn() -> std::result::Result<TD, datasets::Error>,
    ED: Dataset<Item = E::Batch> + Send,
    EF: Fn() -> std::result::Result<ED, datasets::Error> + Sync,
{
    let cluster = estimator.run_config().resolve_cluster()?;
    let role = TaskRole::of(&cluster)?;
    let done = train_and_evaluate_in(
        &cluster,
        estimator,
        train_input_fn,
        train_spec,
        &eval_input_fn,
        eval_spec.clone(),
    )?;
    Ok(match (role, done.trained) {
        (TaskRole::ParameterServer, _) => TaskOutcome::ServedParameters,
        (_, None) => TaskOutcome::Evaluated(done.metrics.unwrap_or_default()),
        (_, Some(outcome)) => {
            let metrics = match done.metrics {
                // As an evaluator's last evaluation: summaries, history, every exporter.
                None if role.is_chief() && !has_evaluator(&cluster) => Some(
                    Evaluations::new(estimator, &eval_input_fn, &eval_spec)?
                        .finish_run(&outcome)?,
                ),
                metrics => metrics,
            };
            TaskOutcome::Trained {
                outcome,
                metrics,
                evaluate_final_model: false,
            }
        }
    })
}

fn has_evaluator(cluster: &ClusterConfig) -> bool {
    matches!(cluster, ClusterConfig::Distributed { cluster, .. } if cluster.evaluator.is_some())
}
