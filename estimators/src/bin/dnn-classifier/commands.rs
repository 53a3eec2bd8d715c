//! The subcommands.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use estimator::cluster::{cluster_from_env, ClusterConfig, TaskType};
use estimator::datasets::{Dataset, DatasetExt, InputFiles};
use estimator::distribute::ps::PsMode;
use estimator::distribute::CommStats;
use estimator::serve_parameters;
use estimator::{
    train_and_evaluate, DeviceSpec, Distribution, Estimator, EstimatorExt, EvalSpec, Exporter,
    Predictor, RunConfig, TrainSpec, VarsToWarmStart, WarmStartSettings,
};
use estimator::{write_json_atomic, DirLock};
use estimators::DnnClassifier;

use crate::classifier::{build_classifier, load_classifier, MODEL_FILE};
use crate::cli::{
    Command, EvaluateArgs, ExportArgs, ExporterName, PredictArgs, PsModeName, TrainArgs,
};
use crate::cluster_share::{batches_per_step, cluster_has_evaluator, input_share};
use crate::input::{batches, eval_schema, schema_for};
use crate::input_format::{InputFormat, Interleaving, SPEC_FILE};
use crate::memory_check;
use crate::output::{metrics_json, print_line, PredictionWriter};
use crate::resumed_flags::apply_to_resumed;
use crate::timing::Timing;
use crate::training_input::TrainingInput;
use crate::values::parse_device;

/// Runs one subcommand; `started` is when the process started, the origin of
/// `startup_secs`.
pub fn run(command: Command, started: Instant) -> Result<()> {
    match command {
        Command::Train(args) => train(args, false, started),
        Command::TrainAndEvaluate(args) => train(args, true, started),
        Command::Evaluate(args) => evaluate(args),
        Command::Predict(args) => predict(args),
        Command::Export(args) => export(args),
    }
}

/// Evaluation of train-and-evaluate: the whole eval file, with the exporters asked for.
fn eval_spec(args: &TrainArgs) -> EvalSpec {
    args.exporters
        .iter()
        .fold(EvalSpec::new(), |spec, exporter| {
            spec.with_exporter(match exporter {
                ExporterName::Latest => Exporter::latest("latest"),
                ExporterName::Best => Exporter::best("best", "loss", false),
                ExporterName::Final => Exporter::final_exporter("final"),
            })
        })
}

pub(crate) fn ps_mode(args: &TrainArgs) -> PsMode {
    match args.ps_mode {
        PsModeName::Async => PsMode::Async {
            max_staleness: args.max_staleness,
        },
        PsModeName::Sync => PsMode::Sync {
            replicas_to_aggregate: args.replicas_to_aggregate.map(|n| n as usize),
        },
    }
}

/// `--replicas-to-aggregate` against the training tasks the cluster has: more could never
/// be gathered, and TF's `SyncReplicasOptimizer` refuses them too.
fn check_replicas_to_aggregate(args: &TrainArgs, cluster: &ClusterConfig) -> Result<()> {
    let Some(wanted) = args.replicas_to_aggregate else {
        return Ok(());
    };
    if args.ps_mode != PsModeName::Sync {
        bail!("--replicas-to-aggregate {wanted} applies to --ps-mode sync only");
    }
    if let ClusterConfig::Distributed { cluster, .. } = cluster {
        let training = cluster.training_tasks().len();
        if wanted as usize > training {
            bail!(
                "--replicas-to-aggregate {wanted}: the cluster has {training} training task(s) \
                 (chief and workers) to gather gradients from"
            );
        }
    }
    Ok(())
}

/// The `--device` value as a [`DeviceSpec`]; whether this build and machine can use it is
/// checked when the model first runs.
fn device(text: &str) -> Result<DeviceSpec> {
    parse_device(text).map_err(|reason| anyhow::anyhow!("--device {text}: {reason}"))
}

fn train(args: TrainArgs, evaluate_after: bool, started: Instant) -> Result<()> {
    if evaluate_after && args.eval.is_none() {
        bail!("train-and-evaluate needs --eval FILE");
    }
    if args.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    memory_check::check_threads(args.intra_op_threads)?;
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
    let mut run_config = RunConfig::new(&args.model_dir)
        .with_tf_random_seed(args.seed)
        .with_device(device(&args.device)?);
    if let Some(steps) = args.save_checkpoints_steps {
        run_config = run_config.with_save_checkpoints_steps(steps);
    }
    let cluster = cluster_from_env()?;
    check_replicas_to_aggregate(&args, &cluster)?;
    let chief = cluster.is_chief();
    let serves_variables = matches!(
        &cluster,
        ClusterConfig::Distributed { task, .. } if task.kind == TaskType::Ps
    );
    let evaluator_task = matches!(
        &cluster,
        ClusterConfig::Distributed { task, .. } if task.kind == TaskType::Evaluator
    );
    // Parameter servers and the evaluator read no training input.
    let (replicas, rank) = if evaluator_task || serves_variables {
        (1, 0)
    } else {
        input_share(&cluster)?
    };
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
    let _lock = chief
        .then(|| DirLock::acquire(&args.model_dir, "training"))
        .transpose()?;
    let saved = args.model_dir.join(MODEL_FILE);
    let (classifier, table) = if saved.exists() {
        tracing::info!("resuming the model saved in {}", args.model_dir.display());
        let saved = load_classifier(&args.model_dir, run_config.device)?;
        (apply_to_resumed(&args, saved, &args.model_dir)?, None)
    } else {
        // Every task derives the same configuration from the same training files; only the
        // chief writes it. A task that trains on every row keeps the rows that pass read.
        let keep_rows = replicas == 1 && !evaluator_task && !serves_variables;
        let (classifier, table) = build_classifier(
            &args,
            run_config,
            keep_rows,
            (&train_files, &format, interleaving),
        )?;
        if let Some(table) = &table {
            tracing::info!(
                "training starts from the {} rows the statistics pass kept in memory",
                table.rows
            );
        }
        if chief {
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
    // Cluster settings are the command line's, also for a model resumed from its saved
    // configuration.
    let mut run_config = classifier
        .run_config()
        .clone()
        .with_ps_mode(ps_mode(&args))
        .with_allreduce_compression(args.allreduce_compression)
        .with_cluster(cluster.clone())
        .with_intra_op_threads(args.intra_op_threads)
        .with_loss_readback(args.loss_readback)
        .with_prefetch_to_device(args.prefetch_to_device);
    if let Some(secs) = args.peer_timeout_secs {
        run_config = run_config.with_peer_timeout_secs(secs);
    }
    if let Some(secs) = args.stall_warning_secs {
        run_config = run_config.with_stall_warning_secs(secs);
    }
    if let Some(secs) = args.startup_timeout_secs {
        run_config = run_config.with_startup_timeout_secs(secs);
    }
    if let Some(from) = &args.warm_start_from {
        let mut settings = WarmStartSettings::new(from);
        if let Some(regex) = &args.warm_start_vars {
            settings = settings.with_vars(VarsToWarmStart::Regex(regex.clone()));
        }
        run_config = run_config.with_warm_start_from(settings);
    }
    // Replicas in this process, each on its own batch of every step.
    let mut in_process = 1;
    if let Some(mirrored) = args.mirrored {
        let resolved = mirrored.on_device(run_config.device)?;
        if let Distribution::Mirrored { replicas } = resolved {
            in_process = replicas;
        }
        run_config = run_config.with_train_distribute(resolved);
    }
    let classifier = classifier.with_run_config(run_config);
    if serves_variables {
        return Ok(serve_parameters(&classifier)?);
    }
    let schema = classifier.schema().clone();
    let (batch_size, seed) = (args.batch_size, args.seed);
    let buffer = args.shuffle_buffer.max(1);
    if !evaluator_task {
        training_input.log_plan(replicas, rank);
    }
    // Each replica reads its own files, or its own rows of every file (sharded before
    // shuffling, as TF's auto-sharding), and keeps them in memory after the first epoch as
    // one table, whose rows are shuffled as handles and copied into reused columnar
    // batches. The table the statistics pass kept, when there is one, stands for that first
    // epoch's reading.
    let input = || {
        let cached = training_input.rows(&format, &schema)?.cache_table();
        let cached = match &table {
            Some(table) => cached.with_table(table.clone()),
            None => cached,
        };
        Ok(cached
            .shuffle(buffer, seed)
            .repeat(None)
            .batch_columnar(batch_size, false)
            .prefetch(4))
    };
    let timing = Timing::default();
    let spec = TrainSpec::max_steps(args.max_steps)
        .with_auto_shard(false)
        .with_hook(timing.hook());
    let evaluate_final = |eval: &InputFiles| -> Result<_> {
        let eval_schema = eval_schema(eval, &schema, &format)?;
        Ok(classifier.evaluate(
            || batches(eval, &eval_schema, batch_size, &format),
            None,
            None,
            None,
        )?)
    };
    let (outcome, metrics) = match (&eval_files, evaluate_after) {
        (Some(eval), true) => {
            let eval_schema = eval_schema(eval, &schema, &format)?;
            let eval_input = || batches(eval, &eval_schema, batch_size, &format);
            let done = train_and_evaluate(&classifier, input, spec, eval_input, eval_spec(&args))?;
            let Some(outcome) = done.trained else {
                // The evaluator task: it evaluated every checkpoint, the last one at the end.
                let metrics = done.metrics.unwrap_or_default();
                if args.json {
                    let step = metrics.get("global_step").copied().unwrap_or(0.0) as u64;
                    print_line(metrics_json(step, &[], &metrics))?;
                }
                return Ok(());
            };
            // The chief of a cluster without an evaluator task evaluates the final model
            // itself (TF would not evaluate at all).
            let metrics = match done.metrics {
                Some(metrics) => metrics,
                None if chief && !cluster_has_evaluator(&cluster) => evaluate_final(eval)?,
                None => Default::default(),
            };
            (outcome, metrics)
        }
        (eval, _) => {
            let outcome = classifier.train(input, spec)?;
            let metrics = match eval {
                Some(eval) if chief => evaluate_final(eval)?,
                _ => Default::default(),
            };
            (outcome, metrics)
        }
    };
    training_input.log_rows_read();
    let examples_per_step =
        (batch_size * in_process * batches_per_step(&cluster, &args, replicas)) as u64;
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

fn evaluate(args: EvaluateArgs) -> Result<()> {
    memory_check::check_threads(args.intra_op_threads)?;
    let classifier = load_classifier(&args.model_dir, device(&args.device)?)?;
    let run_config = classifier.run_config().clone();
    let classifier =
        classifier.with_run_config(run_config.with_intra_op_threads(args.intra_op_threads));
    let eval = InputFiles::resolve(&args.eval)?;
    let format =
        InputFormat::for_model(&eval, args.feature_spec.as_deref(), Some(&args.model_dir))?;
    let schema = eval_schema(&eval, classifier.schema(), &format)?;
    let metrics =
        classifier.evaluate(|| batches(&eval, &schema, 512, &format), None, None, None)?;
    let global_step = metrics.get("global_step").copied().unwrap_or(0.0) as u64;
    if args.json {
        print_line(metrics_json(global_step, &[], &metrics))?;
    } else {
        for (name, value) in &metrics {
            print_line(format!("{name} = {value}"))?;
        }
    }
    Ok(())
}

fn predict(args: PredictArgs) -> Result<()> {
    let out: Box<dyn std::io::Write> = match &args.output {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let mut writer = PredictionWriter::new(out, args.format);
    let input = InputFiles::resolve(&args.input)?;
    let format = InputFormat::for_model(
        &input,
        args.feature_spec.as_deref(),
        args.model_dir.as_deref(),
    )?;
    if let Some(export_dir) = &args.export_dir {
        let predictor = Predictor::<DnnClassifier>::load(export_dir)?;
        let schema = schema_for(&input, predictor.estimator().schema(), &format)?;
        let mut data = batches(&input, &schema, 512, &format)?;
        while let Some(batch) = data.next_item() {
            for prediction in predictor.predict(&batch?)? {
                writer.write(&prediction)?;
            }
        }
    } else {
        let model_dir: PathBuf = args.model_dir.clone().unwrap_or_default();
        let classifier = load_classifier(&model_dir, DeviceSpec::Cpu)?;
        let schema = schema_for(&input, classifier.schema(), &format)?;
        for prediction in classifier.predict(|| batches(&input, &schema, 512, &format), None)? {
            writer.write(&prediction?)?;
        }
    }
    writer.finish()
}

fn export(args: ExportArgs) -> Result<()> {
    let classifier = load_classifier(&args.model_dir, DeviceSpec::Cpu)?;
    let dir = classifier.export(&args.export_dir_base)?;
    print_line(dir.display())?;
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
    ]
}
