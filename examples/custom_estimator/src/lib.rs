//! A hand-written estimator from outside the `estimator` workspace: a two-layer MLP that
//! classifies Iris flowers. It implements only the model function; training, evaluation,
//! prediction, export, checkpoints and TensorBoard summaries come from the trait; serving
//! its exports, from one more (`serving.rs`).

use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::{relu, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use estimator::datasets::{Example, FeatureStats};
use estimator::export::DType;
use estimator::{Error, Estimator, Metric, Metrics, OptimizerSpec, Result, RunConfig, Signature};
use serde::{Deserialize, Serialize};

mod serving;

/// The network: input -> hidden (ReLU) -> logits.
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    hidden: Linear<B>,
    output: Linear<B>,
}

impl<B: Backend> Mlp<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.output.forward(relu(self.hidden.forward(x)))
    }
}

/// The estimator's configuration: everything needed to rebuild the model from an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IrisClassifier {
    /// Where checkpoints and summaries go.
    pub run_config: RunConfig,
    /// Width of the hidden layer.
    pub hidden_units: usize,
    /// Adam learning rate.
    pub learning_rate: f64,
    /// Feature means and standard deviations of the training set, applied inside the model
    /// function so that an export standardises its inputs by itself.
    pub stats: FeatureStats,
}

/// One example's prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrisPrediction {
    /// The most likely class.
    pub class_id: u32,
    /// Probability of each class.
    pub probabilities: Vec<f32>,
}

const N_CLASSES: usize = 3;

/// A batch on the device: raw features `[batch, 4]`, and class ids `[batch]` when the
/// input has labels.
pub struct IrisBatch<B: Backend> {
    features: Tensor<B, 2>,
    labels: Option<Tensor<B, 1, Int>>,
}

impl IrisClassifier {
    /// The features standardised with the training set's statistics, as tensor ops on the
    /// device (TF's `normalizer_fn`), so the input stage only copies raw values.
    fn standardized<B: Backend>(&self, features: &Tensor<B, 2>) -> Tensor<B, 2> {
        let width = self.stats.len();
        let device = &features.device();
        let std: Vec<f32> = self
            .stats
            .std
            .iter()
            .map(|&s| if s > 0.0 && s.is_finite() { s } else { 1.0 })
            .collect();
        let mean =
            Tensor::<B, 2>::from_data(TensorData::new(self.stats.mean.clone(), [1, width]), device);
        let std = Tensor::<B, 2>::from_data(TensorData::new(std, [1, width]), device);
        (features.clone() - mean) / std
    }

    fn logits<B: Backend>(&self, model: &Mlp<B>, batch: &IrisBatch<B>) -> Tensor<B, 2> {
        model.forward(self.standardized(&batch.features))
    }

    fn labels<'b, B: Backend>(&self, batch: &'b IrisBatch<B>) -> Result<&'b Tensor<B, 1, Int>> {
        batch
            .labels
            .as_ref()
            .ok_or_else(|| Error::Config("the batch has no labels".into()))
    }
}

impl Estimator for IrisClassifier {
    type Model<B: Backend> = Mlp<B>;
    type Batch = Vec<Example>;
    type DeviceBatch<B: Backend> = IrisBatch<B>;
    type Prediction = IrisPrediction;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> Mlp<B> {
        Mlp {
            hidden: LinearConfig::new(self.stats.len(), self.hidden_units).init(device),
            output: LinearConfig::new(self.hidden_units, N_CLASSES).init(device),
        }
    }

    fn optimizer(&self) -> OptimizerSpec {
        OptimizerSpec::adam(self.learning_rate)
    }

    /// Runs on the input's prefetch thread, a couple of batches ahead of the step.
    fn to_device<B: Backend>(
        &self,
        batch: &Vec<Example>,
        device: &B::Device,
    ) -> Result<IrisBatch<B>> {
        let width = self.stats.len();
        let mut values = Vec::with_capacity(batch.len() * width);
        for (row, example) in batch.iter().enumerate() {
            if example.dense.len() != width {
                return Err(Error::Config(format!(
                    "example {row} has {} features, not {width}",
                    example.dense.len()
                )));
            }
            values.extend_from_slice(&example.dense);
        }
        let features = Tensor::from_data(TensorData::new(values, [batch.len(), width]), device);
        let labels = if batch.iter().all(|e| e.label.class().is_none()) {
            None
        } else {
            let ids = batch
                .iter()
                .map(|e| {
                    e.label
                        .class()
                        .filter(|c| (*c as usize) < N_CLASSES)
                        .map(|c| c as i64)
                        .ok_or_else(|| {
                            Error::Config(format!("label {:?} is not a class 0..3", e.label))
                        })
                })
                .collect::<Result<Vec<i64>>>()?;
            Some(Tensor::from_data(
                TensorData::new(ids, [batch.len()]),
                device,
            ))
        };
        Ok(IrisBatch { features, labels })
    }

    fn loss<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &IrisBatch<B>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        let loss = CrossEntropyLossConfig::new()
            .init(device)
            .forward(self.logits(model, batch), self.labels(batch)?.clone());
        Ok(loss)
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &IrisBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        let labels = self.labels(batch)?;
        let n = labels.dims()[0];
        let correct = self
            .logits(model, batch)
            .argmax(1)
            .squeeze_dim::<1>(1)
            .equal(labels.clone())
            .int()
            .sum();
        let correct: i64 = correct.into_scalar().elem();
        Ok(Metrics::new().with(
            "accuracy",
            Metric::weighted(correct as f64 / n as f64, n as f64),
        ))
    }

    fn predictions<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &IrisBatch<B>,
        _device: &B::Device,
    ) -> Result<Vec<IrisPrediction>> {
        let probabilities = softmax(self.logits(model, batch), 1);
        let values: Vec<f32> = probabilities
            .into_data()
            .convert::<f32>()
            .to_vec()
            .map_err(|e| Error::Config(format!("cannot read predictions: {e:?}")))?;
        Ok(values
            .chunks(N_CLASSES)
            .map(|p| {
                let class_id = (0..N_CLASSES)
                    .max_by(|&a, &b| p[a].total_cmp(&p[b]))
                    .unwrap_or(0) as u32;
                IrisPrediction {
                    class_id,
                    probabilities: p.to_vec(),
                }
            })
            .collect())
    }

    fn serving_signature(&self) -> Signature {
        Signature::new()
            .with_shaped_input("features", DType::Float32, vec![self.stats.len()])
            .with_output("class_id")
            .with_shaped_output("probabilities", vec![N_CLASSES])
    }

    /// Exports say "iris_mlp", not this type's path, so that renaming the crate or moving
    /// the type leaves them loadable.
    fn export_name() -> String {
        "iris_mlp".into()
    }
}

use burn::tensor::ElementConversion as _;
