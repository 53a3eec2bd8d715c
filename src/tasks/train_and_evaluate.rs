//! `train_and_evaluate`: one entry point every task of a cluster runs, each doing its part
//! (TF's `tf.estimator.train_and_evaluate`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use datasets::Dataset;

use super::connect::strategy_for;
use super::serve_parameters::serve_parameters_in;
use crate::cluster::{ClusterConfig, TaskType};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, EvalSpec, StepLimit, TrainOutcome, TrainSpec};
use crate::evaluator::{run_evaluator, Evaluations, TrainFinished};
use crate::run_loop;

/// Trains `estimator` and evaluates its checkpoints, each task of a cluster doing its part
/// as TF_CONFIG assigns it; returns the final evaluation's metrics where this process
/// evaluated, `None` elsewhere.
///
/// | the cluster (the run configuration's, or TF_CONFIG's) | this process |
/// | --- | --- |
/// | none (local) | trains, evaluating each checkpoint right after it is saved (and the final one), running `eval_spec`'s exporters; returns the final metrics |
/// | chief (or worker 0 without a chief) | trains, then leaves the [`TrainFinished`] marker for the evaluator; `None` |
/// | worker | trains; `None` |
/// | ps | serves parameters ([`serve_parameters`](super::serve_parameters)); `None` |
/// | evaluator | [`run_evaluator`] until the checkpoint of `max_steps` (or the marker's); its metrics |
///
/// In a cluster, `train_spec` must be [`TrainSpec::max_steps`]: it is how the evaluator knows
/// which checkpoint is the last. A cluster without an evaluator task evaluates nothing.
pub fn train_and_evaluate<E, TD, TF, ED, EF>(
    estimator: &E,
    train_input_fn: TF,
    train_spec: TrainSpec,
    eval_input_fn: EF,
    eval_spec: EvalSpec,
) -> Result<TrainAndEvaluateOutcome>
where
    E: Estimator,
    TD: Dataset<Item = E::Batch> + Send,
    TF: Fn() -> std::result::Result<TD, datasets::Error>,
    ED: Dataset<Item = E::Batch> + Send,
    EF: Fn() -> std::result::Result<ED, datasets::Error> + Sync,
{
    let cluster = estimator.run_config().resolve_cluster()?;
    train_and_evaluate_in(
        &cluster,
        estimator,
        train_input_fn,
        train_spec,
        eval_input_fn,
        eval_spec,
    )
}

/// [`train_and_evaluate`] as the task `cluster` describes instead of TF_CONFIG's (the
/// training tasks connect to the peers it lists).
pub fn train_and_evaluate_in<E, TD, TF, ED, EF>(
    cluster: &ClusterConfig,
    estimator: &E,
    train_input_fn: TF,
    train_spec: TrainSpec,
    eval_input_fn: EF,
    eval_spec: EvalSpec,
) -> Result<TrainAndEvaluateOutcome>
where
    E: Estimator,
    TD: Dataset<Item = E::Batch> + Send,
    TF: Fn() -> std::result::Result<TD, datasets::Error>,
    ED: Dataset<Item = E::Batch> + Send,
    EF: Fn() -> std::result::Result<ED, datasets::Error> + Sync,
{
    let whole = cluster;
    let (spec, task) = match cluster {
        ClusterConfig::Local => {
            let (trained, metrics) = local(
                estimator,
                train_input_fn,
                train_spec,
                &eval_input_fn,
                &eval_spec,
            )?;
            return Ok(TrainAndEvaluateOutcome {
                trained: Some(trained),
                metrics: Some(metrics),
            });
        }
        ClusterConfig::Distributed { cluster, task } => (cluster, *task),
    };
    let StepLimit::MaxSteps(max_steps) = train_spec.limit else {
        return Err(Error::Config(format!(
            "a distributed train_and_evaluate needs TrainSpec::max_steps (got {:?}): the \
             evaluator stops at the checkpoint of max_steps",
            train_spec.limit
        )));
    };
    let config = estimator.run_config();
    let model_dir = &config.model_dir;
    let chief = spec.chief_task() == task;
    match task.kind {
        TaskType::Chief | TaskType::Worker => {
            if chief {
                TrainFinished::remove(model_dir)?;
            }
            let input = train_input_fn()?;
            let strategy = strategy_for(config, whole)?;
            let outcome = run_loop::train(estimator, input, train_spec, strategy, None)?;
            if chief {
                TrainFinished {
                    global_step: outcome.global_step,
                    max_steps,
                }
                .write(model_dir)?;
            }
            Ok(TrainAndEvaluateOutcome::trained(outcome))
        }
        TaskType::Ps => {
            serve_parameters_in(whole, estimator)?;
            Ok(TrainAndEvaluateOutcome::default())
        }
        TaskType::Evaluator => {
            let metrics = run_evaluator(estimator, eval_input_fn, &eval_spec, max_steps)?;
            Ok(TrainAndEvaluateOutcome {
                trained: None,
                metrics: Some(metrics),
            })
        }
    }
}

/// Trains in this process, evaluating from the checkpoint listener: each checkpoint right
/// after it is saved (at most one per `throttle_secs`), then the final one if the throttle
/// skipped it, with the final exporters.
fn local<E, TD, TF, ED, EF>(
    estimator: &E,
    train_input_fn: TF,
    train_spec: TrainSpec,
    eval_input_fn: &EF,
    eval_spec: &EvalSpec,
) -> Result<(TrainOutcome, BTreeMap<String, f64>)>
where
    E: Estimator,
    TD: Dataset<Item = E::Batch> + Send,
    TF: Fn() -> std::result::Result<TD, datasets::Error>,
    ED: Dataset<Item = E::Batch> + Send,
    EF: Fn() -> std::result::Result<ED, datasets::Error> + Sync,
{
    let mut evaluations = Evaluations::new(estimator, eval_input_fn, eval_spec)?;
    let throttle = Duration::from_secs(eval_spec.throttle_secs);
    let mut last_start: Option<Instant> = None;
    let mut listener = |checkpoint: &Path, step: u64| -> Result<()> {
        if evaluations.is_done(step) || last_start.is_some_and(|t| t.elapsed() < throttle) {
            return Ok(());
        }
        last_start = Some(Instant::now());
        evaluations.evaluate(checkpoint, step, false).map(drop)
    };
    let strategy = strategy_for(estimator.run_config(), &ClusterConfig::Local)?;
    let outcome = run_loop::train(
        estimator,
        train_input_fn()?,
        train_spec,
        strategy,
        Some(&mut listener),
    )?;
    let metrics = evaluations.finish_run(&outcome)?;
    Ok((outcome, metrics))
}

/// What this task's part of [`train_and_evaluate`] produced.
#[derive(Debug, Default)]
pub struct TrainAndEvaluateOutcome {
    /// The training this task did (local, chief and worker tasks).
    pub trained: Option<TrainOutcome>,
    /// The metrics of the last evaluation (local runs and the evaluator task; the chief of
    /// a cluster leaves evaluation to the evaluator, as in TF).
    pub metrics: Option<BTreeMap<String, f64>>,
}

impl TrainAndEvaluateOutcome {
    fn trained(outcome: TrainOutcome) -> Self {
        Self {
            trained: Some(outcome),
            metrics: None,
        }
    }
}
