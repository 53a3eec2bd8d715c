//! The subcommands.

use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use estimator::datasets::{Dataset, InputFiles};
use estimator::export::export_checkpoint;
use estimator::{load_estimator, AtomicFile, DeviceSpec, Estimator, EstimatorExt, Predictor};
use estimators::DnnClassifier;

use crate::classifier::{load_classifier, with_thresholds};
use crate::cli::{Command, EvaluateArgs, ExportArgs, PredictArgs};
use crate::input::{batches, eval_schema, naming_label_input};
use crate::input_format::{describe, InputFormat};
use crate::memory_check;
use crate::output::{metrics_json, print_line, PredictionWriter};
use crate::prediction_input::PredictionInput;
use crate::train_command::train;
use crate::values::device_flag;

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

fn evaluate(args: EvaluateArgs) -> Result<()> {
    memory_check::check_threads("--intra-op-threads", args.intra_op_threads)?;
    let mut classifier = load_classifier(&args.model_dir, device_flag(&args.device)?)?;
    if let Some(thresholds) = &args.thresholds {
        classifier = with_thresholds(classifier, thresholds)?;
    }
    let run_config = classifier.run_config().clone();
    let classifier =
        classifier.with_run_config(run_config.with_intra_op_threads(args.intra_op_threads));
    let eval = InputFiles::resolve(&args.eval)?;
    let format =
        InputFormat::for_model(&eval, args.feature_spec.as_deref(), Some(&args.model_dir))?;
    let schema = eval_schema(&eval, classifier.schema(), &format)?;
    let metrics = classifier
        .evaluate(
            || batches(&eval, &schema, 512, &format),
            None,
            args.checkpoint.as_deref(),
            args.name.as_deref(),
        )
        .map_err(|e| naming_label_input(e, &describe(&eval), &schema))?;
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
    memory_check::check_threads("--intra-op-threads", args.intra_op_threads)?;
    // A run that fails half-way leaves --output as it was, not cut short.
    let mut file = args.output.as_deref().map(AtomicFile::create).transpose()?;
    let out: Box<dyn std::io::Write + '_> = match &mut file {
        Some(file) => Box::new(file),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let name = args
        .output
        .as_ref()
        .map_or("stdout".into(), |path| path.display().to_string());
    let mut writer = PredictionWriter::new(out, name, args.format);
    let input = InputFiles::resolve(&args.input)?;
    let format = InputFormat::for_model(
        &input,
        args.feature_spec.as_deref(),
        args.model_dir.as_deref(),
    )?;
    if let Some(export_dir) = &args.export_dir {
        // The sizes in the export's configuration, before loading builds the model; one
        // that cannot be read is left for the load to report.
        if let Ok(exported) = load_estimator::<DnnClassifier>(export_dir) {
            let file = export_dir.join("estimator.json");
            memory_check::check_model_fits(&file, &exported, memory_check::available_bytes())?;
        }
        let predictor = Predictor::<DnnClassifier>::load(export_dir)?;
        let estimator = predictor.estimator();
        writer.select_keys(&args.predict_keys, estimator.head())?;
        let weight = estimator.weight_column().map(|w| w.name.as_str());
        let reading = PredictionInput::new(&input, estimator.schema(), weight, &format)?;
        let mut data = reading.batches(&input, 512)?;
        while let Some(batch) = data.next_item() {
            for prediction in predictor.predict(&batch?)? {
                writer.write(&prediction)?;
            }
        }
    } else {
        let model_dir: PathBuf = args.model_dir.clone().unwrap_or_default();
        let classifier = load_classifier(&model_dir, device_flag(&args.device)?)?;
        let run_config = classifier.run_config().clone();
        let classifier =
            classifier.with_run_config(run_config.with_intra_op_threads(args.intra_op_threads));
        writer.select_keys(&args.predict_keys, classifier.head())?;
        let weight = classifier.weight_column().map(|w| w.name.as_str());
        let reading = PredictionInput::new(&input, classifier.schema(), weight, &format)?;
        for prediction in
            classifier.predict(|| reading.batches(&input, 512), args.checkpoint.as_deref())?
        {
            writer.write(&prediction?)?;
        }
    }
    writer.finish()?;
    match file {
        Some(file) => Ok(file.commit()?),
        None => Ok(()),
    }
}

fn export(args: ExportArgs) -> Result<()> {
    let classifier = load_classifier(&args.model_dir, DeviceSpec::Cpu)?;
    let dir = export_checkpoint(
        &classifier,
        args.checkpoint.as_deref(),
        &args.export_dir_base,
    )?;
    print_line(dir.display())?;
    Ok(())
}
