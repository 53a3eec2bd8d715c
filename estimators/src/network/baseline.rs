//! [`BaselineNetwork`]: logits that ignore the features (TF's `Baseline*`).

use burn::module::{Module, Param};
use burn::nn::Initializer;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{ColumnarBatch, Schema};
use estimator::export::InputSpec;
use estimator::{MixedPrecision, Result};
use serde::{Deserialize, Serialize};

use super::Network;

/// One learned bias per logit and nothing else: a classifier learns the (log) class
/// priors, a regressor the label mean. A yardstick for the other estimators.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct BaselineNetwork {}

/// The bias.
#[derive(Module, Debug)]
pub struct BaselineModel<B: Backend> {
    /// One value per logit, starting at zero.
    pub bias: Param<Tensor<B, 1>>,
}

impl Network for BaselineNetwork {
    const NAME: &'static str = "Baseline";

    type Model<B: Backend> = BaselineModel<B>;

    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> BaselineModel<B> {
        BaselineModel {
            bias: Initializer::Zeros.init([logits_dimension], device),
        }
    }

    /// The batch size: the features are not read.
    type Inputs<B: Backend> = usize;

    fn inputs<B: Backend>(&self, batch: &ColumnarBatch, _device: &B::Device) -> Result<usize> {
        Ok(batch.rows)
    }

    /// A bias: nothing to compute in 16 bits.
    fn logits<B: Backend>(
        &self,
        model: &BaselineModel<B>,
        inputs: &usize,
        _precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>> {
        let [classes] = model.bias.shape().dims();
        let zeros = Tensor::<B, 2>::zeros([*inputs, classes], &model.bias.device());
        Ok(zeros + model.bias.val().reshape([1, classes]))
    }

    fn serving_inputs(&self) -> Vec<InputSpec> {
        Vec::new()
    }

    fn check_saved(&self, _schema: &Schema) -> Result<()> {
        Ok(())
    }
}
