//! A small estimator (MLP with dropout) on synthetic data, shared by the integration tests.

use std::path::Path;

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::activation::{relu, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use estimator::datasets::{from_vec, Dataset, DatasetExt, Example, Label};
use estimator::{Estimator, Metric, Metrics, OptimizerSpec, Result, RunConfig, Signature};
use serde::{Deserialize, Serialize};

#[derive(Module, Debug)]
pub struct Net<B: Backend> {
    hidden: Linear<B>,
    dropout: Dropout,
    output: Linear<B>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TinyClassifier {
    pub run_config: RunConfig,
    pub hidden_units: usize,
    pub dropout: f64,
    pub optimizer: OptimizerSpec,
    /// Whether the hidden layer is frozen (built with `no_grad`: not trained).
    #[serde(default)]
    pub frozen_hidden: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TinyPrediction {
    pub class_id: u32,
    pub probabilities: Vec<f32>,
}

pub const FEATURES: usize = 4;
pub const CLASSES: usize = 3;

impl TinyClassifier {
    pub fn new(model_dir: &Path) -> Self {
        Self {
            run_config: RunConfig::new(model_dir)
                .with_save_checkpoints_steps(20)
                .with_save_summary_steps(10)
                .with_log_step_count_steps(10)
                .with_progress(false),
            hidden_units: 8,
            dropout: 0.2,
            optimizer: OptimizerSpec::adam(0.01),
            frozen_hidden: false,
        }
    }

    fn x<B: Backend>(batch: &[Example], device: &B::Device) -> Tensor<B, 2> {
        let values: Vec<f32> = batch.iter().flat_map(|e| e.dense.iter().copied()).collect();
        Tensor::from_data(TensorData::new(values, [batch.len(), FEATURES]), device)
    }

    fn y<B: Backend>(batch: &[Example], device: &B::Device) -> Tensor<B, 1, Int> {
        let labels: Vec<i64> = batch
            .iter()
            .map(|e| e.label.class().unwrap_or(0) as i64)
            .collect();
        Tensor::from_data(TensorData::new(labels, [batch.len()]), device)
    }
}

impl<B: Backend> Net<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.output
            .forward(self.dropout.forward(relu(self.hidden.forward(x))))
    }
}

impl Estimator for TinyClassifier {
    type Model<B: Backend> = Net<B>;
    type Batch = Vec<Example>;
    /// Features `[batch, FEATURES]` and class ids `[batch]`.
    type DeviceBatch<B: Backend> = (Tensor<B, 2>, Tensor<B, 1, Int>);
    type Prediction = TinyPrediction;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> Net<B> {
        let hidden = LinearConfig::new(FEATURES, self.hidden_units).init(device);
        Net {
            hidden: if self.frozen_hidden {
                hidden.no_grad()
            } else {
                hidden
            },
            dropout: DropoutConfig::new(self.dropout).init(),
            output: LinearConfig::new(self.hidden_units, CLASSES).init(device),
        }
    }

    fn optimizer(&self) -> OptimizerSpec {
        self.optimizer.clone()
    }

    fn to_device<B: Backend>(
        &self,
        batch: &Vec<Example>,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>> {
        Ok((Self::x(batch, device), Self::y(batch, device)))
    }

    fn loss<B: Backend>(
        &self,
        model: &Net<B>,
        (x, y): &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        let logits = model.forward(x.clone());
        Ok(CrossEntropyLossConfig::new()
            .init(device)
            .forward(logits, y.clone()))
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &Net<B>,
        (x, y): &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        let predicted = model.forward(x.clone()).argmax(1).squeeze_dim::<1>(1);
        let correct: i64 = predicted.equal(y.clone()).int().sum().into_scalar().elem();
        let n = y.dims()[0] as f64;
        Ok(Metrics::new().with("accuracy", Metric::weighted(correct as f64 / n, n)))
    }

    fn predictions<B: Backend>(
        &self,
        model: &Net<B>,
        (x, _): &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Vec<TinyPrediction>> {
        let probabilities = softmax(model.forward(x.clone()), 1);
        let values: Vec<f32> = probabilities.into_data().convert::<f32>().to_vec().unwrap();
        Ok(values
            .chunks(CLASSES)
            .map(|p| TinyPrediction {
                class_id: (0..CLASSES).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap() as u32,
                probabilities: p.to_vec(),
            })
            .collect())
    }

    fn serving_signature(&self) -> Signature {
        Signature::new()
            .with_shaped_input("x", estimator::export::DType::Float32, vec![FEATURES])
            .with_output("class_id")
            .with_output("probabilities")
    }
}

/// 240 examples whose class is decided by which of three feature sums is largest.
pub fn examples() -> Vec<Example> {
    let mut state = 12345u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
    };
    (0..240)
        .map(|_| {
            let dense: Vec<f32> = (0..FEATURES).map(|_| next()).collect();
            let scores = [dense[0] + dense[1], dense[2], dense[3] - dense[0]];
            let class = (0..3)
                .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
                .unwrap() as u32;
            Example {
                dense,
                categorical: Vec::new(),
                label: Label::Class(class),
            }
        })
        .collect()
}

/// Shuffled, repeated batches of 16: the training input.
pub fn train_input(
) -> std::result::Result<impl Dataset<Item = Vec<Example>>, estimator::datasets::Error> {
    Ok(from_vec(examples())
        .shuffle(64, 3)
        .repeat(None)
        .batch(16, false))
}

/// One pass in batches of 40: the evaluation input.
pub fn eval_input(
) -> std::result::Result<impl Dataset<Item = Vec<Example>>, estimator::datasets::Error> {
    Ok(from_vec(examples()).batch(40, false))
}

/// [`examples`] in file order, repeated, in batches of `batch`, where rows 32..48 have their
/// features multiplied by 1e15: a batch that makes the gradients explode.
pub fn exploding_input(
    batch: usize,
) -> std::result::Result<impl Dataset<Item = Vec<Example>>, estimator::datasets::Error> {
    let mut rows = examples();
    for row in &mut rows[32..48] {
        row.dense.iter_mut().for_each(|x| *x *= 1e15);
    }
    Ok(from_vec(rows).repeat(None).batch(batch, false))
}
