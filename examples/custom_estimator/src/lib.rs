//! A hand-written estimator from outside the `estimator` workspace: a two-layer MLP that
//! classifies Iris flowers. It implements only the model function; training, evaluation,
//! prediction, export, checkpoints and TensorBoard summaries come from the trait.

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

impl IrisClassifier {
    fn features<B: Backend>(&self, batch: &[Example], device: &B::Device) -> Tensor<B, 2> {
        let width = self.stats.len();
        let mut values = Vec::with_capacity(batch.len() * width);
        for example in batch {
            let mut row = example.dense.clone();
            self.stats.normalize(&mut row);
            values.extend_from_slice(&row);
        }
        Tensor::from_data(TensorData::new(values, [batch.len(), width]), device)
    }

    fn labels<B: Backend>(
        &self,
        batch: &[Example],
        device: &B::Device,
    ) -> Result<Tensor<B, 1, Int>> {
        let labels = batch
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
        Ok(Tensor::from_data(
            TensorData::new(labels, [batch.len()]),
            device,
        ))
    }
}

impl Estimator for IrisClassifier {
    type Model<B: Backend> = Mlp<B>;
    type Batch = Vec<Example>;
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

    fn loss<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &Vec<Example>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        let logits = model.forward(self.features(batch, device));
        let loss = CrossEntropyLossConfig::new()
            .init(device)
            .forward(logits, self.labels(batch, device)?);
        Ok(loss)
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &Vec<Example>,
        device: &B::Device,
    ) -> Result<Metrics> {
        let logits = model.forward(self.features(batch, device));
        let labels = self.labels::<B>(batch, device)?;
        let correct = logits
            .argmax(1)
            .squeeze_dim::<1>(1)
            .equal(labels)
            .int()
            .sum();
        let correct: i64 = correct.into_scalar().elem();
        Ok(Metrics::new().with(
            "accuracy",
            Metric::weighted(correct as f64 / batch.len() as f64, batch.len() as f64),
        ))
    }

    fn predictions<B: Backend>(
        &self,
        model: &Mlp<B>,
        batch: &Vec<Example>,
        device: &B::Device,
    ) -> Result<Vec<IrisPrediction>> {
        let probabilities = softmax(model.forward(self.features(batch, device)), 1);
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
            .with_output("probabilities")
    }
}

use burn::tensor::ElementConversion as _;
