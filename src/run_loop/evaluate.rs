//! The evaluation loop: streaming metrics over a dataset, written as eval summaries.

use std::collections::BTreeMap;
use std::path::Path;

use burn::tensor::backend::Backend;
use burn::tensor::ElementConversion;
use datasets::Dataset;

use super::device_input::{check_ahead, with_device_input};
use super::progress::RunProgressBar;
use crate::checkpoint::restore_for_inference;
use crate::device::{cpu_threads, with_cpu_threads, CpuBackend, ResolvedDevice};
use crate::error::{Error, Result};
use crate::estimator::Estimator;
use crate::io::DirLock;
use crate::metrics::{eval_dir, EvalHistory, EvalRecord};
use crate::metrics::{Metric, Metrics};
use crate::summary::SummaryWriter;

/// Evaluates `estimator` on `dataset` on the configured device.
pub fn evaluate<E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    dataset: D,
    steps: Option<u64>,
    checkpoint: Option<&Path>,
    name: Option<&str>,
) -> Result<BTreeMap<String, f64>> {
    let config = estimator.run_config();
    match config.device.resolve()? {
        ResolvedDevice::Cpu => with_cpu_threads(cpu_threads(config.intra_op_threads, 1), || {
            evaluate_on::<CpuBackend, E, D>(
                estimator,
                &Default::default(),
                dataset,
                steps,
                checkpoint,
                name,
            )
        })?,
        #[cfg(feature = "cuda")]
        ResolvedDevice::Cuda(index) => evaluate_on::<crate::device::CudaBackend, E, D>(
            estimator,
            &burn::backend::cuda::CudaDevice::new(index),
            dataset,
            steps,
            checkpoint,
            name,
        ),
        #[cfg(not(feature = "cuda"))]
        ResolvedDevice::Cuda(_) => Err(Error::Config("built without the `cuda` feature".into())),
    }
}

fn evaluate_on<B: Backend, E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    device: &B::Device,
    mut dataset: D,
    steps: Option<u64>,
    checkpoint: Option<&Path>,
    name: Option<&str>,
) -> Result<BTreeMap<String, f64>> {
    let config = estimator.run_config();
    check_ahead(config.prefetch_to_device)?;
    let restored = restore_for_inference::<B, _>(
        &config.model_dir,
        config.tf_random_seed,
        device,
        checkpoint,
        || estimator.build_model::<B>(device),
    )?;
    let progress = RunProgressBar::new(steps, config.progress, "eval");
    let mut metrics = Metrics::new();
    let mut batches = 0u64;
    let to_device = |batch: &E::Batch| estimator.to_device::<B>(batch, device);
    let ahead = config.prefetch_to_device;
    with_device_input(&mut dataset, ahead, &to_device, |input| -> Result<()> {
        while steps.is_none_or(|s| batches < s) {
            let Some(batch) = input.next_batch().transpose()? else {
                break;
            };
            let loss: f64 = estimator
                .loss::<B>(&restored.model, &batch, device)?
                .into_scalar()
                .elem();
            metrics.add("loss", Metric::mean_of([loss]));
            metrics.merge(&estimator.eval_metrics::<B>(&restored.model, &batch, device)?);
            batches += 1;
            progress.update(batches, String::new);
        }
        Ok(())
    })?;
    progress.finish();
    if batches == 0 {
        return Err(Error::Config("evaluation input yielded no batch".into()));
    }
    let mut values = metrics.values();
    values.insert("global_step".into(), restored.global_step as f64);

    let dir = eval_dir(&config.model_dir, name);
    let lock = DirLock::acquire(&dir, "evaluation")?;
    // A write cut short by the directory's removal is reported as the removal.
    let explained = |e| lock.explain_write_failure(e);
    let mut writer = SummaryWriter::create(&dir).map_err(explained)?;
    for (tag, value) in &values {
        if tag != "global_step" {
            writer.scalar(tag, *value, restored.global_step);
        }
    }
    writer.flush();
    let record = EvalRecord {
        global_step: restored.global_step,
        metrics: values.clone(),
    };
    EvalHistory::append(&dir, &record).map_err(explained)?;
    let mut json: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect();
    json.insert("global_step".into(), restored.global_step.into());
    let json = serde_json::Value::Object(json);
    progress.log(&format!("eval metrics: {json}"));
    Ok(values)
}
