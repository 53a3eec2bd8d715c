//! Device-resident input against the host's: the same rows in the same order, the same
//! weights and losses to the bit, step-exact resume across the two, and the fallback.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use datasets::{
    from_vec, table_indices, BoxDataset, ColumnarBatch, Dataset, DatasetExt, Example, Label, Labels,
};
use serde::{Deserialize, Serialize};

use super::*;
use crate::hooks::{Control, Emit, Hook, StepInfo};
use crate::tasks::EstimatorExt;
use crate::{Estimator, Metrics, OptimizerSpec, Result, RunConfig, Signature, TrainSpec};

const ROWS: usize = 23;
const BATCH: usize = 5;
const BUFFER: usize = 7;
const SEED: u64 = 3;

#[derive(Module, Debug)]
struct Net<B: Backend> {
    linear: Linear<B>,
    dropout: Dropout,
}

/// A regression on three features, with dropout (seeded per step) in its loss.
#[derive(Serialize, Deserialize)]
struct Reg {
    run_config: RunConfig,
    #[serde(skip)]
    uploads: Arc<AtomicUsize>,
}

impl Reg {
    fn new(dir: &Path, budget: Option<u64>) -> Self {
        let mut run_config = RunConfig::new(dir)
            .with_tf_random_seed(SEED)
            .with_save_checkpoints_steps(4)
            .with_intra_op_threads(1)
            .with_progress(false);
        run_config.device_cache_bytes = budget;
        Self {
            run_config,
            uploads: Arc::default(),
        }
    }
}

impl Estimator for Reg {
    type Model<B: Backend> = Net<B>;
    type Batch = ColumnarBatch;
    type DeviceBatch<B: Backend> = (Tensor<B, 2>, Tensor<B, 2>);
    type Prediction = f32;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> Net<B> {
        Net {
            linear: LinearConfig::new(3, 1).init(device),
            dropout: DropoutConfig::new(0.3).init(),
        }
    }

    fn optimizer(&self) -> OptimizerSpec {
        OptimizerSpec::adam(0.05)
    }

    fn to_device<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>> {
        let Labels::Float(y) = &batch.labels else {
            unreachable!("float labels")
        };
        let x = TensorData::new(batch.dense.clone(), [batch.rows, 3]);
        let y = TensorData::new(y.clone(), [batch.rows, 1]);
        Ok((Tensor::from_data(x, device), Tensor::from_data(y, device)))
    }

    fn loss<B: Backend>(
        &self,
        model: &Net<B>,
        (x, y): &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        let predicted = model.linear.forward(model.dropout.forward(x.clone()));
        Ok((predicted - y.clone()).powi_scalar(2).mean())
    }

    fn predictions<B: Backend>(
        &self,
        _model: &Net<B>,
        _batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Vec<f32>> {
        Ok(Vec::new())
    }

    fn eval_metrics<B: Backend>(
        &self,
        _model: &Net<B>,
        _batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        Ok(Metrics::new())
    }

    fn serving_signature(&self) -> Signature {
        Signature::default()
    }
}

impl GatherInput for Reg {
    type Table<B: Backend> = (Tensor<B, 2>, Tensor<B, 2>);

    fn upload<B: Backend>(
        &self,
        table: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::Table<B>> {
        self.uploads.fetch_add(1, Ordering::SeqCst);
        self.to_device(table, device)
    }

    fn gather<B: Backend>(
        &self,
        table: &Self::Table<B>,
        rows: &RowIndices<B>,
    ) -> Result<Self::DeviceBatch<B>> {
        Ok(table.gather_rows(rows))
    }

    fn host_rows(&self, table: &ColumnarBatch, rows: &[u32]) -> Result<ColumnarBatch> {
        Ok(table.gather(rows)?)
    }

    fn table_rows(&self, table: &ColumnarBatch) -> usize {
        table.rows
    }

    fn table_bytes(&self, table: &ColumnarBatch) -> u64 {
        (table.rows * 4 * 4) as u64
    }
}

fn examples() -> Vec<Example> {
    (0..ROWS)
        .map(|i| {
            let x = [i as f32 / 7.0, (i % 5) as f32, -(i as f32).sqrt()];
            Example {
                dense: x.to_vec(),
                categorical: Vec::new(),
                label: Label::Float(2.0 * x[0] - x[1] + 0.5 * x[2]),
            }
        })
        .collect()
}

fn table() -> ColumnarBatch {
    ColumnarBatch::from_examples(&examples()).unwrap()
}

type Input = BoxDataset<CachedBatch<ColumnarBatch>>;

/// Today's input: rows cached, shuffled, repeated, batched with a remainder.
fn host_input() -> std::result::Result<Input, datasets::Error> {
    Ok(from_vec(examples())
        .cache_table()
        .shuffle(BUFFER, SEED)
        .repeat(None)
        .batch_columnar(BATCH, false)
        .map(CachedBatch::Batch)
        .boxed())
}

/// The same pipeline over row numbers.
fn rows_input() -> std::result::Result<Input, datasets::Error> {
    Ok(table_indices(ROWS)
        .shuffle(BUFFER, SEED)
        .repeat(None)
        .batch(BATCH, false)
        .map(CachedBatch::Rows)
        .boxed())
}

/// Every step's loss, as the loop read it.
struct Losses(Arc<Mutex<Vec<(u64, u64)>>>);

impl Hook for Losses {
    fn name(&self) -> &str {
        "losses"
    }

    fn after_step(&mut self, step: &StepInfo, _emit: &mut Emit) -> Result<Control> {
        // A step's loss may be read a step late: keyed by the step it is of, once.
        let mut losses = self.0.lock().unwrap();
        if losses.last().is_none_or(|&(last, _)| last < step.loss_step) {
            losses.push((step.loss_step, step.loss.to_bits()));
        }
        Ok(Control::Continue)
    }
}

/// Trains `cached` to `last_step` on `input`: the final weights' CRC and every step's loss.
fn train(
    cached: &DeviceCached<Reg>,
    input: fn() -> std::result::Result<Input, datasets::Error>,
    last_step: u64,
) -> (u32, Vec<(u64, u64)>) {
    let losses = Arc::new(Mutex::new(Vec::new()));
    let spec = TrainSpec::max_steps(last_step).with_hook(Losses(losses.clone()));
    let outcome = cached.train(input, spec).unwrap();
    let losses = losses.lock().unwrap().clone();
    (outcome.weights_crc32c.unwrap(), losses)
}

fn cached(dir: &Path, budget: Option<u64>) -> DeviceCached<Reg> {
    DeviceCached::new(Reg::new(dir, budget)).with_table(table())
}

#[test]
fn a_table_on_the_device_trains_to_the_bit_as_the_hosts_batches() {
    let (host_dir, device_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = cached(host_dir.path(), Some(0));
    let on_device = cached(device_dir.path(), Some(1 << 20));
    assert!(!host.plan().unwrap().unwrap().fits());
    assert!(on_device.plan().unwrap().unwrap().fits());
    let (host_crc, host_losses) = train(&host, host_input, 13);
    let (crc, losses) = train(&on_device, rows_input, 13);
    assert!(losses.len() >= 5, "{losses:?}");
    assert_eq!(losses, host_losses);
    assert_eq!(crc, host_crc);
    assert_eq!(on_device.estimator().uploads.load(Ordering::SeqCst), 1);
    assert_eq!(host.estimator().uploads.load(Ordering::SeqCst), 0);

    // The wrapper changes nothing for the estimator's own input.
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = Reg::new(plain_dir.path(), None);
    let rows = || {
        Ok::<_, datasets::Error>(
            from_vec(examples())
                .cache_table()
                .shuffle(BUFFER, SEED)
                .repeat(None)
                .batch_columnar(BATCH, false),
        )
    };
    let outcome = plain.train(rows, TrainSpec::max_steps(13)).unwrap();
    assert_eq!(outcome.weights_crc32c, Some(host_crc));
}

#[test]
fn a_table_beyond_the_budget_stays_on_the_host_and_trains_the_same() {
    let (host_dir, small_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let small = cached(small_dir.path(), Some(ROWS as u64));
    let plan = small.plan().unwrap().unwrap();
    assert!(!plan.fits(), "{plan}");
    let (crc, losses) = train(&small, rows_input, 9);
    let (host_crc, host_losses) = train(&cached(host_dir.path(), Some(0)), host_input, 9);
    assert_eq!((crc, losses), (host_crc, host_losses));
    assert_eq!(small.estimator().uploads.load(Ordering::SeqCst), 0);
}

#[test]
fn resume_mid_epoch_is_step_exact_from_either_inputs_checkpoint() {
    let whole_dir = tempfile::tempdir().unwrap();
    let (whole_crc, whole_losses) = train(&cached(whole_dir.path(), Some(1 << 20)), rows_input, 14);
    type Half = fn() -> std::result::Result<Input, datasets::Error>;
    let halves: [(Half, Half); 3] = [
        (rows_input, rows_input),
        (host_input, rows_input),
        (rows_input, host_input),
    ];
    for (first, second) in halves {
        let dir = tempfile::tempdir().unwrap();
        // Step 7: the second epoch's third batch (5 batches an epoch, the last of 3 rows).
        let (_, early) = train(&cached(dir.path(), Some(1 << 20)), first, 7);
        let (crc, late) = train(&cached(dir.path(), Some(1 << 20)), second, 14);
        assert_eq!(crc, whole_crc);
        // The losses read back, which the runs' read-back schedules pick, agree where both
        // read them; the last step's is read by both.
        let whole: std::collections::BTreeMap<_, _> = whole_losses.iter().copied().collect();
        let resumed = [early, late].concat();
        let shared: Vec<_> = resumed
            .iter()
            .filter(|(s, _)| whole.contains_key(s))
            .collect();
        assert!(
            shared.iter().all(|(s, l)| whole[s] == *l),
            "{resumed:?} {whole:?}"
        );
        assert_eq!(resumed.last(), whole_losses.last());
    }
}

#[test]
fn sharded_row_numbers_pick_the_rows_each_worker_reads() {
    let table = table();
    for (workers, rank) in [(2, 0), (2, 1), (3, 2)] {
        let mut rows = from_vec(examples())
            .cache_table()
            .shuffle(BUFFER, SEED)
            .repeat(Some(2))
            .batch_columnar(BATCH, false)
            .shard(workers, rank);
        let mut numbers = table_indices(ROWS)
            .shuffle(BUFFER, SEED)
            .repeat(Some(2))
            .batch(BATCH, false)
            .shard(workers, rank);
        let mut batches = 0;
        while let Some(batch) = rows.next_item() {
            let picked = numbers.next_item().unwrap().unwrap();
            assert_eq!(table.gather(&picked).unwrap(), batch.unwrap());
            assert_eq!(rows.position(), numbers.position());
            batches += 1;
        }
        assert!(numbers.next_item().is_none());
        assert!(
            batches >= 3,
            "{workers} workers, rank {rank}: {batches} batches"
        );
    }
}

#[test]
fn row_numbers_without_a_table_or_past_its_end_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let device = Default::default();
    let bare = DeviceCached::new(Reg::new(dir.path(), Some(1 << 20)));
    let rows = CachedBatch::Rows(vec![0, 1]);
    let err = bare
        .to_device::<crate::CpuBackend>(&rows, &device)
        .err()
        .unwrap();
    assert!(err.to_string().contains("no table"), "{err}");
    let cached = cached(dir.path(), Some(1 << 20));
    let past = CachedBatch::Rows(vec![0, ROWS as u32]);
    let err = cached
        .to_device::<crate::CpuBackend>(&past, &device)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("row 23 of a 23-row table"),
        "{err}"
    );
}

#[test]
fn the_budget_is_the_settings_else_none_on_the_cpu() {
    let config = RunConfig::new("unused");
    assert_eq!(device_cache_budget(&config).unwrap(), 0);
    assert_eq!(
        device_cache_budget(&config.with_device_cache_bytes(5)).unwrap(),
        5
    );
    let plan = CachePlan {
        rows: 10,
        bytes: 10,
        budget: 10,
    };
    assert!(plan.fits());
    assert!(!CachePlan {
        budget: 0,
        bytes: 0,
        ..plan
    }
    .fits());
    assert!(!CachePlan { bytes: 11, ..plan }.fits());
}

#[test]
fn the_saved_estimator_is_the_wrapped_one() {
    let dir = tempfile::tempdir().unwrap();
    let cached = cached(dir.path(), Some(7));
    let json = serde_json::to_value(&cached).unwrap();
    assert_eq!(json, serde_json::to_value(cached.estimator()).unwrap());
    let back: DeviceCached<Reg> = serde_json::from_value(json).unwrap();
    assert!(back.table().is_none());
    assert_eq!(back.run_config().device_cache_bytes, Some(7));
}
