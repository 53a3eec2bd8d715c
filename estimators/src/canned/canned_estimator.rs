//! [`CannedEstimator`]: a [`Network`] plus a [`Head`], implementing the core `Estimator`.

use std::marker::PhantomData;

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{ColumnarBatch, Labels, Schema};
use estimator::head::{Head, HeadLabels, HeadPrediction};
use estimator::{
    Error, Estimator, LossReduction, Metrics, MixedPrecision, OptimizerSpec, Result, RunConfig,
    Signature,
};
use serde::Serialize;

use super::{Task, WeightColumn};
use crate::network::Network;

mod saved;

/// A canned estimator: network `N` (DNN, linear, wide & deep, baseline) with a head for
/// task `K` (classification or regression). Use the aliases — [`DnnClassifier`],
/// [`LinearRegressor`], … — and their `new`; everything a served model needs (columns,
/// vocabularies, normalisers, head) is in this serialisable value, so
/// `Predictor::<DnnClassifier>::load(export_dir)` rebuilds it. Read back, it gets the checks
/// `new` makes of a new one, since the file may have been edited or damaged.
///
/// [`DnnClassifier`]: super::DnnClassifier
/// [`LinearRegressor`]: super::LinearRegressor
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(bound = "N: Network")]
pub struct CannedEstimator<N, K> {
    run_config: RunConfig,
    schema: Schema,
    network: N,
    head: Head,
    weight_column: Option<WeightColumn>,
    optimizer: OptimizerSpec,
    #[serde(skip_serializing_if = "is_mean")]
    loss_reduction: LossReduction,
    #[serde(skip)]
    task: PhantomData<K>,
}

fn is_mean(reduction: &LossReduction) -> bool {
    *reduction == LossReduction::SumOverBatchSize
}

impl<N: Network, K: Task> CannedEstimator<N, K> {
    /// Assembles an estimator; constructors of the aliases call this.
    pub(crate) fn from_parts(
        run_config: RunConfig,
        schema: &Schema,
        network: N,
        head: Head,
        optimizer: OptimizerSpec,
    ) -> Self {
        Self {
            run_config,
            schema: schema.clone(),
            network,
            head,
            weight_column: None,
            optimizer,
            loss_reduction: LossReduction::SumOverBatchSize,
            task: PhantomData,
        }
    }

    /// Weights each example's loss by input column `name` (numeric; TF's `weight_column`).
    pub fn with_weight_column(mut self, name: &str) -> Result<Self> {
        self.weight_column = Some(WeightColumn::resolve(name, &self.schema)?);
        Ok(self)
    }

    /// Runs with `run_config` instead (another model directory, device or seed).
    pub fn with_run_config(mut self, run_config: RunConfig) -> Self {
        self.run_config = run_config;
        self
    }

    /// Trains with `optimizer` instead of the default.
    pub fn with_optimizer(mut self, optimizer: OptimizerSpec) -> Self {
        self.optimizer = optimizer;
        self
    }

    /// Reduces each batch's training loss by `reduction` (TF's `loss_reduction`): with
    /// [`LossReduction::Sum`] the loss is the weighted sum over the batch, not its mean, and
    /// the batches of replicas and accumulated passes add up into an update.
    pub fn with_loss_reduction(mut self, reduction: LossReduction) -> Self {
        self.loss_reduction = reduction;
        self
    }

    /// The network's configuration.
    pub fn network(&self) -> &N {
        &self.network
    }

    /// The network's configuration, to change it (builders of the aliases use this).
    pub(crate) fn network_mut(&mut self) -> &mut N {
        &mut self.network
    }

    /// The head.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// The head, to change it.
    pub(crate) fn head_mut(&mut self) -> &mut Head {
        &mut self.head
    }

    /// The input schema the columns were resolved against.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The weight column, if any.
    pub fn weight_column(&self) -> Option<&WeightColumn> {
        self.weight_column.as_ref()
    }
}

/// A canned estimator's batch on the device: the network's inputs and the head's labels.
pub struct CannedBatch<B: Backend, I> {
    /// The network's inputs; `None` for an empty batch.
    pub inputs: Option<I>,
    /// The labels and example weights; `None` when the batch has no label column.
    pub labels: Option<HeadLabels<B>>,
}

impl<N: Network, K: Task> Estimator for CannedEstimator<N, K> {
    type Model<B: Backend> = N::Model<B>;
    type Batch = ColumnarBatch;
    type DeviceBatch<B: Backend> = CannedBatch<B, N::Inputs<B>>;
    type Prediction = HeadPrediction;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    /// TF's name of the canned estimator (`DNNClassifier`, `LinearRegressor`,
    /// `DNNLinearCombinedClassifier`), which survives any move of the Rust types.
    fn export_name() -> String {
        match N::NAME {
            "" => std::any::type_name::<Self>().to_string(),
            network => format!("{network}{}", K::NAME),
        }
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> N::Model<B> {
        self.network.build(self.head.logits_dimension(), device)
    }

    fn optimizer(&self) -> OptimizerSpec {
        self.optimizer.clone()
    }

    fn to_device<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>> {
        if batch.is_empty() {
            return Ok(CannedBatch {
                inputs: None,
                labels: None,
            });
        }
        let inputs = self.network.inputs(batch, device)?;
        let labels = if batch.labels == Labels::None {
            None
        } else {
            let weights = match &self.weight_column {
                Some(w) => Some(w.weights(batch)?),
                None => None,
            };
            Some(self.head.batch_labels(&batch.labels, weights, device)?)
        };
        Ok(CannedBatch {
            inputs: Some(inputs),
            labels,
        })
    }

    fn loss<B: Backend>(
        &self,
        model: &N::Model<B>,
        batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        let (logits, labels) = self.logits_and_labels(model, batch)?;
        let mean = self.head.loss(logits, labels);
        Ok(match self.loss_reduction {
            LossReduction::SumOverBatchSize => mean,
            LossReduction::Sum => mean.mul_scalar(labels.len() as f32),
        })
    }

    fn loss_reduction(&self) -> LossReduction {
        self.loss_reduction
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &N::Model<B>,
        batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Metrics> {
        let (logits, labels) = self.logits_and_labels(model, batch)?;
        self.head.metrics(logits, labels)
    }

    fn predictions<B: Backend>(
        &self,
        model: &N::Model<B>,
        batch: &Self::DeviceBatch<B>,
        _device: &B::Device,
    ) -> Result<Vec<HeadPrediction>> {
        match &batch.inputs {
            None => Ok(Vec::new()),
            // In f32 whatever the policy: predict gives what an export of the same weights
            // serves.
            Some(inputs) => {
                let logits = self.network.logits(model, inputs, MixedPrecision::None)?;
                self.head.predictions(logits)
            }
        }
    }

    fn serving_signature(&self) -> Signature {
        let signature = self
            .network
            .serving_inputs()
            .into_iter()
            .fold(Signature::new(), |s, input| {
                s.with_shaped_input(input.name, input.dtype, input.shape)
            });
        (self.head.output_shapes().into_iter()).fold(signature, |s, (key, shape)| {
            s.with_shaped_output(key, shape)
        })
    }
}

impl<N: Network, K: Task> CannedEstimator<N, K> {
    /// Logits and head labels of a non-empty, labelled batch, computed in the run's
    /// precision (training and evaluation).
    fn logits_and_labels<'b, B: Backend>(
        &self,
        model: &N::Model<B>,
        batch: &'b CannedBatch<B, N::Inputs<B>>,
    ) -> Result<(Tensor<B, 2>, &'b HeadLabels<B>)> {
        let Some(inputs) = &batch.inputs else {
            return Err(Error::Config(
                "cannot compute a loss on an empty batch".into(),
            ));
        };
        let Some(labels) = &batch.labels else {
            return Err(Error::Config(
                "the batch has no labels: the input has no label column".into(),
            ));
        };
        let precision = self.run_config.mixed_precision;
        Ok((self.network.logits(model, inputs, precision)?, labels))
    }
}

#[cfg(test)]
mod tests;
