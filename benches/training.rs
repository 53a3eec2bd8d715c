//! Training throughput: the raw Burn step (Flex and NdArray backends) against the same step
//! driven by `Estimator::train`, on an MLP 64→128→64→10, Adam, batch 128, in-memory data.
//!
//! Run: `cargo bench --bench training` (add `-- --rounds 5 --steps 300` to change the
//! sample). Runs are interleaved (A B C, A B C, …) because this machine's speed drifts;
//! the report gives medians and the framework-to-raw ratio per round.

use std::time::Instant;

use burn::backend::{Autodiff, Flex, NdArray};
use burn::module::{AutodiffModule, Module};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::activation::relu;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};
use estimator::datasets::{from_vec, DatasetExt};
use estimator::{Estimator, EstimatorExt, OptimizerSpec, Result, RunConfig, Signature, TrainSpec};
use serde::{Deserialize, Serialize};

const BATCH: usize = 128;
const INPUT: usize = 64;
const CLASSES: usize = 10;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    l1: Linear<B>,
    l2: Linear<B>,
    l3: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            l1: LinearConfig::new(INPUT, 128).init(device),
            l2: LinearConfig::new(128, 64).init(device),
            l3: LinearConfig::new(64, CLASSES).init(device),
        }
    }

    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.l3
            .forward(relu(self.l2.forward(relu(self.l1.forward(x)))))
    }
}

/// A pre-flattened batch: what a user feeding dense data would hand the model.
#[derive(Clone)]
struct Batch {
    x: Vec<f32>,
    y: Vec<i64>,
}

fn batches(n: usize) -> Vec<Batch> {
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..n)
        .map(|_| Batch {
            x: (0..BATCH * INPUT).map(|_| next()).collect(),
            y: (0..BATCH)
                .map(|_| (next() * CLASSES as f32) as i64 % CLASSES as i64)
                .collect(),
        })
        .collect()
}

fn tensors<B: Backend>(b: &Batch, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
    (
        Tensor::from_data(TensorData::new(b.x.clone(), [BATCH, INPUT]), device),
        Tensor::from_data(TensorData::new(b.y.clone(), [BATCH]), device),
    )
}

/// The raw Burn training step: forward, backward, Adam — nothing else.
fn raw_steps<B: AutodiffBackend>(data: &[Batch], steps: usize) -> f64 {
    let device = B::Device::default();
    let mut model = Mlp::<B>::new(&device);
    let mut optim = AdamConfig::new().init::<B, Mlp<B>>();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let start = Instant::now();
    for step in 0..steps {
        let (x, y) = tensors::<B>(&data[step % data.len()], &device);
        let loss = loss_fn.forward(model.forward(x), y);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    let _ = model.valid();
    (steps * BATCH) as f64 / start.elapsed().as_secs_f64()
}

#[derive(Serialize, Deserialize)]
struct BenchEstimator {
    run_config: RunConfig,
}

impl Estimator for BenchEstimator {
    type Model<B: Backend> = Mlp<B>;
    type Batch = Batch;
    type DeviceBatch<B: Backend> = (Tensor<B, 2>, Tensor<B, 1, Int>);
    type Prediction = u32;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> Mlp<B> {
        Mlp::new(device)
    }

    fn optimizer(&self) -> OptimizerSpec {
        OptimizerSpec::adam(1e-3)
    }

    fn to_device<B: Backend>(
        &self,
        batch: &Batch,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>> {
        Ok(tensors::<B>(batch, device))
    }

    fn loss<B: Backend>(
        &self,
        model: &Mlp<B>,
        (x, y): &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        Ok(CrossEntropyLossConfig::new()
            .init(device)
            .forward(model.forward(x.clone()), y.clone()))
    }

    fn predictions<B: Backend>(
        &self,
        _: &Mlp<B>,
        (_, y): &Self::DeviceBatch<B>,
        _: &B::Device,
    ) -> Result<Vec<u32>> {
        Ok(vec![0; y.dims()[0]])
    }

    fn serving_signature(&self) -> Signature {
        Signature::new()
    }
}

/// The same step driven by `Estimator::train` with its defaults: hooks, summaries every 100
/// steps, the loss read back one step late, batches prefetched to the device `ahead` batches
/// ahead (0: built on the training thread), a final checkpoint.
fn framework_steps(data: &[Batch], steps: usize, ahead: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let est = BenchEstimator {
        run_config: RunConfig::new(dir.path())
            .with_progress(false)
            .with_prefetch_to_device(ahead),
    };
    let input = from_vec(data.to_vec()).repeat(None);
    let start = Instant::now();
    est.train(move || Ok(input), TrainSpec::max_steps(steps as u64))
        .expect("training");
    (steps * BATCH) as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 5;
    let mut steps = 300;
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        match w[0].as_str() {
            "--rounds" => rounds = w[1].parse().expect("--rounds N"),
            "--steps" => steps = w[1].parse().expect("--steps N"),
            _ => {}
        }
    }
    let data = batches(64);
    // Warm-up: first touches of the allocator and thread pools.
    raw_steps::<Autodiff<Flex>>(&data, 20);
    raw_steps::<Autodiff<NdArray>>(&data, 20);
    framework_steps(&data, 20, 2);

    let (mut flex, mut ndarray, mut framework, mut ratios) = (vec![], vec![], vec![], vec![]);
    let (mut inline, mut prefetch_gains) = (vec![], vec![]);
    for round in 0..rounds {
        let a = raw_steps::<Autodiff<Flex>>(&data, steps);
        let b = raw_steps::<Autodiff<NdArray>>(&data, steps);
        let c = framework_steps(&data, steps, 2);
        let d = framework_steps(&data, steps, 0);
        println!(
            "round {round}: raw flex {a:>9.0} ex/s | raw ndarray {b:>9.0} ex/s | estimator (flex) {c:>9.0} ex/s | overhead {:>5.1}% | estimator, no device prefetch {d:>9.0} ex/s",
            (a / c - 1.0) * 100.0
        );
        flex.push(a);
        ndarray.push(b);
        framework.push(c);
        ratios.push(a / c - 1.0);
        inline.push(d);
        prefetch_gains.push(c / d);
    }
    println!(
        "median raw Burn step, Flex:     {:.0} examples/s",
        median(flex.clone())
    );
    println!(
        "median raw Burn step, NdArray:  {:.0} examples/s",
        median(ndarray.clone())
    );
    println!(
        "median Estimator::train (Flex): {:.0} examples/s",
        median(framework)
    );
    println!(
        "median framework overhead vs raw Flex step: {:.1}% of the step time",
        median(ratios) * 100.0
    );
    println!(
        "median Estimator::train, prefetch_to_device(0): {:.0} examples/s; prefetch(2) / prefetch(0): {:.2}",
        median(inline),
        median(prefetch_gains)
    );
    println!(
        "Flex / NdArray speed ratio: {:.2}",
        median(flex) / median(ndarray)
    );
}
