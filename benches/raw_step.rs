//! The raw Burn training step on device-resident data: the reference `scripts/bench-gpu`
//! holds `dnn-classifier` (and PyTorch eager) against. An MLP (Linear + ReLU, cross-entropy,
//! Adam lr 0.001, f32) trains on 8 batches of Gaussian rows created on the device once;
//! every step selects its batch there through an index tensor (a row permutation per epoch,
//! uploaded at start), as the PyTorch comparison does. Nothing else: no input pipeline, no
//! hooks, no checkpoint. `--input host` keeps the rows in host memory instead and copies each
//! step's batch to the device on the training thread, as a loop fed by an input pipeline
//! must: the difference between the two is the price of the upload alone. `--input
//! prefetched` uploads each batch from a thread of its own (its own cubecl stream, so the
//! driver's staging of the pageable copy never waits on the training stream) and the training
//! thread copies it once on the device before use (the one cross-stream read, after which
//! cubecl may reuse the upload's memory): the upload kept off the training stream.
//!
//! Run: `cargo bench --bench raw_step -- --features 784 --hidden 128,64 --batch 128
//! --steps 1000 [--device cpu|cuda[:N]] [--read-loss every|never]
//! [--input device|host|prefetched]`
//! (`cuda` needs `--features cuda`). Prints one JSON line shaped like `dnn-classifier train
//! --json`'s: `examples_per_sec` after the first min(100, 10 %) steps, `startup_secs` until
//! then (kernel compilation on a GPU), `total_examples_per_sec`, and which `input`. `--read-loss every` reads the loss back
//! after each step (a host-device sync per step, as PyTorch's `loss.item()`); `never`
//! (default) reads it only where the clock starts and stops.

use std::sync::mpsc::sync_channel;
use std::time::Instant;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::activation::relu;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, ElementConversion, Int, Tensor, TensorData};

const CLASSES: usize = 10;
/// Rows on the device: this many batches.
const BATCHES: usize = 8;
/// Row permutations uploaded at start, used in turn epoch after epoch.
const PERMUTATIONS: usize = 4;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    hidden: Vec<Linear<B>>,
    output: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    fn new(features: usize, hidden: &[usize], device: &B::Device) -> Self {
        let mut width = features;
        let mut layers = Vec::new();
        for &units in hidden {
            layers.push(LinearConfig::new(width, units).init(device));
            width = units;
        }
        Self {
            hidden: layers,
            output: LinearConfig::new(width, CLASSES).init(device),
        }
    }

    fn forward(&self, mut x: Tensor<B, 2>) -> Tensor<B, 2> {
        for layer in &self.hidden {
            x = relu(layer.forward(x));
        }
        self.output.forward(x)
    }
}

struct Args {
    features: usize,
    hidden: Vec<usize>,
    batch: usize,
    steps: usize,
    device: String,
    read_every_step: bool,
    input: Input,
}

/// Where each step's batch comes from.
#[derive(Clone, Copy, PartialEq)]
enum Input {
    /// Selected from rows already on the device.
    Device,
    /// Gathered on the host and uploaded on the training thread.
    Host,
    /// Gathered and uploaded on a thread of its own, copied on the device by the step.
    Prefetched,
}

impl Input {
    fn name(self) -> &'static str {
        match self {
            Input::Device => "device",
            Input::Host => "host",
            Input::Prefetched => "prefetched",
        }
    }
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        features: 64,
        hidden: vec![128, 64],
        batch: 128,
        steps: 1000,
        device: "cpu".into(),
        read_every_step: false,
        input: Input::Device,
    };
    let given: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < given.len() {
        let flag = given[i].as_str();
        // `cargo bench` passes `--bench` to every bench binary.
        if flag == "--bench" {
            i += 1;
            continue;
        }
        let value = given
            .get(i + 1)
            .ok_or_else(|| anyhow::anyhow!("{flag}: expected a value"))?;
        let number = |what: &str| -> anyhow::Result<usize> {
            match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(anyhow::anyhow!(
                    "{what} {value}: expected a positive number"
                )),
            }
        };
        match flag {
            "--features" => args.features = number(flag)?,
            "--batch" => args.batch = number(flag)?,
            "--steps" => args.steps = number(flag)?,
            "--hidden" => {
                args.hidden = value
                    .split(',')
                    .map(|units| match units.trim().parse::<usize>() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(anyhow::anyhow!(
                            "--hidden {value}: expected units like 128,64"
                        )),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--device" => args.device = value.clone(),
            "--read-loss" => {
                args.read_every_step = match value.as_str() {
                    "every" => true,
                    "never" => false,
                    _ => anyhow::bail!("--read-loss {value}: expected every or never"),
                }
            }
            "--input" => {
                args.input = match value.as_str() {
                    "device" => Input::Device,
                    "host" => Input::Host,
                    "prefetched" => Input::Prefetched,
                    _ => anyhow::bail!("--input {value}: expected device, host or prefetched"),
                }
            }
            _ => anyhow::bail!("unknown option {flag}"),
        }
        i += 2;
    }
    Ok(args)
}

/// Permutations of `0..rows` from a fixed LCG.
fn orders(rows: usize) -> Vec<Vec<i64>> {
    let mut state = 7u64;
    (0..PERMUTATIONS)
        .map(|_| {
            let mut order: Vec<i64> = (0..rows as i64).collect();
            for i in (1..rows).rev() {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                order.swap(i, (state >> 33) as usize % (i + 1));
            }
            order
        })
        .collect()
}

/// The same rows and permutations in host memory (`--input host` and `prefetched`).
struct HostRows {
    x: Vec<f32>,
    y: Vec<i64>,
    orders: Vec<Vec<i64>>,
    features: usize,
}

impl HostRows {
    /// Rows `position..position + batch` of permutation `epoch`, gathered on the host and
    /// copied to `device`.
    fn batch<B: Backend>(
        &self,
        epoch: usize,
        position: usize,
        batch: usize,
        device: &B::Device,
    ) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        let rows = &self.orders[epoch][position..position + batch];
        let mut x = Vec::with_capacity(batch * self.features);
        for &row in rows {
            let start = row as usize * self.features;
            x.extend_from_slice(&self.x[start..start + self.features]);
        }
        let y: Vec<i64> = rows.iter().map(|&row| self.y[row as usize]).collect();
        (
            Tensor::from_data(TensorData::new(x, [batch, self.features]), device),
            Tensor::from_data(TensorData::new(y, [batch]), device),
        )
    }
}

/// Trains for `args.steps` steps on `device`; the JSON line.
fn run<B: AutodiffBackend>(args: &Args, device: B::Device, started: Instant) -> String {
    let rows = BATCHES * args.batch;
    let x_all = Tensor::<B, 2>::random(
        [rows, args.features],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let labels: Vec<i64> = (0..rows as i64).map(|r| r % CLASSES as i64).collect();
    let host = (args.input != Input::Device).then(|| HostRows {
        x: x_all.to_data().to_vec::<f32>().expect("f32 rows"),
        y: labels.clone(),
        orders: orders(rows),
        features: args.features,
    });
    let y_all = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [rows]), &device);
    let permutations = orders(rows)
        .into_iter()
        .map(|order| Tensor::<B, 1, Int>::from_data(TensorData::new(order, [rows]), &device))
        .collect::<Vec<_>>();
    let mut model = Mlp::<B>::new(args.features, &args.hidden, &device);
    let mut optim = AdamConfig::new().init::<B, Mlp<B>>();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let warmup = (args.steps / 10).clamp(1, 100);
    let mut warm = None;
    let mut last_loss = 0.0f32;
    let place = |step: usize| {
        (
            (step - 1) / BATCHES % PERMUTATIONS,
            (step - 1) % BATCHES * args.batch,
        )
    };
    let model = std::thread::scope(|scope| {
        let prefetched = match (&host, args.input) {
            (Some(host), Input::Prefetched) => {
                let (sender, receiver) = sync_channel(2);
                let device = device.clone();
                scope.spawn(move || {
                    for step in 1..=args.steps {
                        let (epoch, position) = place(step);
                        let batch = host.batch::<B>(epoch, position, args.batch, &device);
                        if sender.send(batch).is_err() {
                            break;
                        }
                    }
                });
                Some(receiver)
            }
            _ => None,
        };
        for step in 1..=args.steps {
            let (epoch, position) = place(step);
            let (x, y) = match (&prefetched, &host) {
                (Some(batches), _) => {
                    let (x, y) = batches.recv().expect("the upload thread ended early");
                    // The upload stream's only reader: a copy on the training stream.
                    (x.mul_scalar(1.0), y.add_scalar(0))
                }
                (None, Some(host)) => host.batch::<B>(epoch, position, args.batch, &device),
                (None, None) => {
                    let index = permutations[epoch].clone().narrow(0, position, args.batch);
                    (
                        x_all.clone().select(0, index.clone()),
                        y_all.clone().select(0, index),
                    )
                }
            };
            let loss = loss_fn.forward(model.forward(x), y);
            let read = args.read_every_step || step == warmup || step == args.steps;
            if read {
                last_loss = loss.clone().into_scalar().elem::<f32>();
            }
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
            if step == warmup {
                warm = Some(Instant::now());
            }
        }
        model
    });
    // The last update's weights, so that the clock stops after the device has made them.
    let _ = model.output.weight.val().into_data();
    let end = Instant::now();
    let warm = warm.unwrap_or(end);
    let steady_steps = args.steps.saturating_sub(warmup);
    let steady = if steady_steps > 0 {
        (steady_steps * args.batch) as f64 / (end - warm).as_secs_f64()
    } else {
        0.0
    };
    format!(
        "{{\"examples_per_sec\":{steady},\"startup_secs\":{},\"total_examples_per_sec\":{},\"final_loss\":{last_loss},\"input\":\"{}\"}}",
        (warm - started).as_secs_f64(),
        (args.steps * args.batch) as f64 / (end - started).as_secs_f64(),
        args.input.name(),
    )
}

fn main() {
    let started = Instant::now();
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("raw_step: {e}");
            std::process::exit(2);
        }
    };
    let line = match args.device.as_str() {
        "cpu" => {
            run::<burn::backend::Autodiff<burn::backend::Flex>>(&args, Default::default(), started)
        }
        cuda if cuda == "cuda" || cuda.starts_with("cuda:") => {
            let index = match cuda.strip_prefix("cuda:").map(str::parse::<usize>) {
                None => 0,
                Some(Ok(index)) => index,
                Some(Err(_)) => {
                    eprintln!("raw_step: --device {cuda}: expected cuda or cuda:N");
                    std::process::exit(2);
                }
            };
            run_cuda(&args, index, started)
        }
        other => {
            eprintln!("raw_step: --device {other}: expected cpu, cuda or cuda:N");
            std::process::exit(2);
        }
    };
    println!("{line}");
}

#[cfg(feature = "cuda")]
fn run_cuda(args: &Args, index: usize, started: Instant) -> String {
    use burn::backend::cuda::CudaDevice;
    // The estimator's check, for a one-line error where Burn would panic without a driver.
    if let Err(e) = estimator::DeviceSpec::Cuda(index).resolve() {
        eprintln!("raw_step: {e}");
        std::process::exit(2);
    }
    run::<burn::backend::Autodiff<burn::backend::Cuda>>(args, CudaDevice::new(index), started)
}

#[cfg(not(feature = "cuda"))]
fn run_cuda(_: &Args, _: usize, _: Instant) -> String {
    eprintln!("raw_step: built without the `cuda` feature (cargo bench --features cuda)");
    std::process::exit(2);
}
