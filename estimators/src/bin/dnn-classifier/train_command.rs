//! `train` and `train-and-evaluate`: the flags and input files turned into a classifier, a
//! run configuration and input functions, handed to the library's task call, whose outcome
//! is reported.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use estimator::cluster::cluster_from_env;
use estimator::datasets::{DatasetExt, InputFiles};
use estimator::device_cache::CachedBatch;
use estimator::distribute::CommStats;
use estimator::{
    train_and_evaluate_task, training_task, Estimator, EstimatorExt, RunConfig, TaskOutcome,
    TaskRole, TrainSpec,
};
use estimator::{write_json_atomic, DirLock};

use crate::classifier::{build_classifier, load_classifier, MODEL_FILE};
use crate::input::{batches, eval_schema, naming_label_input};
use crate::input_format::{describe, InputFormat, Interleaving, SPEC_FILE};
use crate::memory_check;
use crate::output::{metrics_json, print_line};
use crate::resumed_flags::apply_to_resumed;
use crate::run_flags::{check_replicas_to_aggregate, cluster_run_config, eval_spec};
use crate::timing::Timing;
use crate::train_args::TrainArgs;
use crate::training_batches::TrainingBatches;
use crate::training_input::TrainingInput;
use crate::values::device_flag;
use crate::warm_start_layout::follow_layout;

/// Trains (and with `evaluate_after`, evaluates as train-and-evaluate does) as this task's
/// role in the cluster asks; `started` is when the process started.
pub fn train(args: TrainArgs, evaluate_after: bool, started: Instant) -> Result<()> {
    if evaluate_after && args.eval.is_none() {
        bail!("train-and-evaluate needs --eval FILE");
    }
    if !evaluate_after && args.exporters.is_some() {
        bail!("--exporters: train exports nothing; exporters run in train-and-evaluate");
    }
    if !evaluate_after && args.early_stopping.given() {
        bail!("early stopping judges the evaluations of train-and-evaluate: train has none");
    }
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    memory_check::check_threads("--intra-op-threads", args.intra_op_threads)?;
    memory_check::check_threads("--allreduce-threads", args.allreduce_threads)?;
    memory_check::check_prefetch(args.prefetch_to_device, 0, args.batch_size, None)?;
    let train_files = InputFiles::resolve(&args.train)?;
    let eval_files = args.eval.as_deref().map(InputFiles::resolve).transpose()?;
    if let Some(eval) = &eval_files {
        // Before training, not after it: a FIFO there would block the end of the run.
        for file in eval.paths() {
            estimator::datasets::open_regular(file)?;
        }
    }
    let interleaving = Interleaving {
        cycle_length: usize::try_from(args.cycle_length).unwrap_or(usize::MAX),
        block_length: usize::try_from(args.block_length).unwrap_or(usize::MAX),
    };
    let files: Vec<&Path> = (train_files.paths().iter())
        .chain(eval_files.iter().flat_map(InputFiles::paths))
        .map(PathBuf::as_path)
        .collect();
    let format = InputFormat::for_training(
        &files,
        args.feature_spec.as_deref(),
        args.label_column.as_deref(),
        &args.model_dir,
    )?;
    let run_config = RunConfig::new(&args.model_dir)
        .with_tf_random_seed(args.seed)
        .with_device(device_flag(&args.device)?);
    let cluster = cluster_from_env()?;
    check_replicas_to_aggregate(&args, &cluster)?;
    let role = TaskRole::of(&cluster)?;
    let (replicas, rank) = role.input_share();
    // Refused here, before the statistics pass: FILE with fewer files than tasks.
    let training_input = TrainingInput::new(
        &train_files,
        args.auto_shard_policy,
        replicas,
        rank,
        interleaving,
    )?;
    // The chief writes the model directory: a second run on it is refused before either
    // configuration is read or written.
    let _lock = role
        .is_chief()
        .then(|| DirLock::acquire(&args.model_dir, "training"))
        .transpose()?;
    let saved = args.model_dir.join(MODEL_FILE);
    let resumed = saved.exists();
    let (classifier, table) = if resumed {
        tracing::info!("resuming the model saved in {}", args.model_dir.display());
        let saved = load_classifier(&args.model_dir, run_config.device)?;
        (apply_to_resumed(&args, saved, &args.model_dir)?, None)
    } else {
        // Every task derives the same configuration from the same training files; only the
        // chief writes it. A task that trains on every row keeps the rows that pass read.
        let (classifier, table) = build_classifier(
            &args,
            run_config,
            role.reads_every_row(),
            (&train_files, &format, interleaving),
        )?;
        if let Some(table) = &table {
            tracing::info!(
                "training starts from the {} rows the statistics pass kept in memory",
                table.rows
            );
        }
        if role.is_chief() {
            std::fs::create_dir_all(&args.model_dir)
                .with_context(|| format!("cannot create {}", args.model_dir.display()))?;
            write_json_atomic(&saved, &classifier)?;
            if let InputFormat::TfRecord(spec) = &format {
                // Evaluate and predict read TFRecord files through it without being told.
                write_json_atomic(&args.model_dir.join(SPEC_FILE), spec)?;
            }
        }
        (classifier, table)
    };
    let (run_config, in_process) = cluster_run_config(&args, classifier.run_config(), &cluster)?;
    let classifier = classifier.with_run_config(run_config);
    // A model directory of its own resumes from its checkpoints, with no warm start.
    let classifier = match resumed {
        true => classifier,
        false => follow_layout(classifier)?,
    };
    let schema = classifier.schema().clone();
    let (batch_size, seed) = (args.batch_size, args.seed);
    let buffer = args.shuffle_buffer.max(1);
    if role.reads_training_input() {
        training_input.log_plan(replicas, rank);
    }
    // Each replica reads its own files, or its own rows of every file (sharded before
    // shuffling, as TF's auto-sharding), and keeps them in memory: on the device when they
    // fit its budget, else on the host after the first epoch. The table the statistics pass
    // kept, when there is one, stands for that first epoch's reading.
    let training = TrainingBatches::new(
        classifier,
        table,
        (&training_input, &format, &schema),
        (batch_size, buffer, seed),
        role.reads_training_input(),
    )?;
    let input = || training.input();
    let classifier = training.cached.estimator();
    let timing = Timing::default();
    // SIGTERM (a pod being evicted) or Ctrl-C: stop with a checkpoint, exit 128 + signal.
    let mut spec = TrainSpec::max_steps(args.max_steps)
        .with_auto_shard(false)
        .with_stop_on_signals(true)
        .with_hook(timing.hook());
    if let Some(hook) = args.early_stopping.hook(&args.model_dir) {
        let cadence = &args.cadence;
        if cadence.save_checkpoints_steps.is_none() && cadence.save_checkpoints_secs.is_none() {
            tracing::warn!(
                "early stopping judges the evaluations that follow each checkpoint, every 600 s \
                 by default: --save-checkpoints-steps N evaluates more often"
            );
        }
        spec = spec.with_hook(hook);
    }
    let task = match (&eval_files, evaluate_after) {
        (Some(eval), true) => {
            // A ps task reads no input, so its machine needs no evaluation files.
            let eval_schema = match role.reads_input() {
                true => eval_schema(eval, &schema, &format)?,
                false => schema.clone(),
            };
            let eval_input =
                || Ok(batches(eval, &eval_schema, batch_size, &format)?.map(CachedBatch::Batch));
            let eval_spec = eval_spec(&args);
            let files = format!("{} or {}", describe(&train_files), describe(eval));
            train_and_evaluate_task(&training.cached, input, spec, eval_input, eval_spec)
                .map_err(|e| naming_label_input(e, &files, &schema))?
        }
        _ => training_task(&training.cached, input, spec)
            .map_err(|e| naming_label_input(e, &describe(&train_files), &schema))?,
    };
    // Device memory for the final evaluation.
    training.cached.release();
    let (outcome, metrics, evaluate_final_model) = match task {
        TaskOutcome::ServedParameters => return Ok(()),
        TaskOutcome::Evaluated(metrics) => {
            // The evaluator task: it evaluated every checkpoint, the last one at the end.
            if args.json {
                let step = metrics.get("global_step").copied().unwrap_or(0.0) as u64;
                print_line(metrics_json(step, &[], &metrics))?;
            }
            return Ok(());
        }
        TaskOutcome::Trained {
            outcome,
            metrics,
            evaluate_final_model,
        } => (outcome, metrics, evaluate_final_model),
    };
    let metrics = match (metrics, &eval_files) {
        (Some(metrics), _) => metrics,
        (None, Some(eval)) if evaluate_final_model => {
            let eval_schema = eval_schema(eval, &schema, &format)?;
            classifier
                .evaluate(
                    || batches(eval, &eval_schema, batch_size, &format),
                    None,
                    None,
                    None,
                )
                .map_err(|e| naming_label_input(e, &describe(eval), &schema))?
        }
        (None, _) => Default::default(),
    };
    training_input.log_rows_read();
    let config = classifier.run_config();
    let examples_per_step = (batch_size
        * in_process
        * config.backward_passes_per_step.max(1)
        * role.batches_per_global_step(&cluster, &config.ps_mode))
        as u64;
    let rates = timing.report(
        started,
        Instant::now(),
        outcome.global_steps_run,
        examples_per_step,
    );
    tracing::info!(
        "trained to global_step {} ({} steps of this task's, {} global steps over \
         {} replica(s)): {:.0} examples/s after {:.2} s of start-up, {:.0} examples/s \
         overall",
        outcome.global_step,
        outcome.steps_run,
        outcome.global_steps_run,
        replicas * in_process,
        rates.examples_per_sec,
        rates.startup_secs,
        rates.total_examples_per_sec
    );
    if args.json {
        print_line(metrics_json(
            outcome.global_step,
            &[
                [
                    ("examples_per_sec", rates.examples_per_sec),
                    ("startup_secs", rates.startup_secs),
                    ("total_examples_per_sec", rates.total_examples_per_sec),
                ]
                .as_slice(),
                &sync_fields(outcome.comm.as_ref()),
            ]
            .concat(),
            &metrics,
        ))?;
    }
    Ok(())
}

/// Per-step synchronisation times for `--json`, when replicas averaged gradients.
fn sync_fields(comm: Option<&CommStats>) -> Vec<(&'static str, f64)> {
    let Some(comm) = comm.filter(|c| c.steps > 0) else {
        return Vec::new();
    };
    let steps = comm.steps as f64;
    vec![
        ("sync_secs_per_step", comm.sync_seconds / steps),
        ("sync_copy_secs_per_step", comm.copy_seconds / steps),
        ("sync_wire_secs_per_step", comm.wire_seconds() / steps),
        ("sync_reduce_secs_per_step", comm.reduce_seconds / steps),
        ("sync_apply_secs_per_step", comm.apply_seconds / steps),
        ("sync_low_rank_secs_per_step", comm.low_rank_seconds / steps),
    ]
}
