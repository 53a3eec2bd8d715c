//! [`WideDeepNetwork`]: a linear model and a DNN whose logits are summed (TF's
//! `DNNLinearCombined*`).

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use datasets::{ColumnarBatch, Schema};
use estimator::export::InputSpec;
use estimator::{MixedPrecision, Result};
use serde::{Deserialize, Serialize};

use super::{DnnModel, DnnNetwork, LinearModel, LinearNetwork, Network};
use crate::input_tensors::InputTensors;

/// Wide & deep: the "wide" linear part sees `linear` columns, the "deep" DNN sees `dnn`
/// columns, and the logits are their sum. The canned estimators train the parts with
/// their own optimizers, as TF (FTRL for the linear part, Adagrad for the DNN).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WideDeepNetwork {
    /// The linear ("wide") part.
    pub linear: LinearNetwork,
    /// The DNN ("deep") part.
    pub dnn: DnnNetwork,
}

/// The weights of both parts.
#[derive(Module, Debug)]
pub struct WideDeepModel<B: Backend> {
    /// The linear part.
    pub linear: LinearModel<B>,
    /// The DNN part.
    pub dnn: DnnModel<B>,
}

impl WideDeepNetwork {
    /// The module path of the linear part's variables (`linear.weights`, …), for an
    /// optimizer of its own ([`estimator::OptimizerSpec::with_part`]).
    pub const LINEAR_MODULE: &'static str = "linear";
}

impl Network for WideDeepNetwork {
    const NAME: &'static str = "DNNLinearCombined";

    type Model<B: Backend> = WideDeepModel<B>;

    fn build<B: Backend>(&self, logits_dimension: usize, device: &B::Device) -> WideDeepModel<B> {
        WideDeepModel {
            linear: self.linear.build(logits_dimension, device),
            dnn: self.dnn.build(logits_dimension, device),
        }
    }

    /// The linear part's inputs, then the DNN's.
    type Inputs<B: Backend> = (InputTensors<B>, InputTensors<B>);

    fn inputs<B: Backend>(
        &self,
        batch: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::Inputs<B>> {
        Ok((
            self.linear.inputs(batch, device)?,
            self.dnn.inputs(batch, device)?,
        ))
    }

    fn logits<B: Backend>(
        &self,
        model: &WideDeepModel<B>,
        inputs: &Self::Inputs<B>,
        precision: MixedPrecision,
    ) -> Result<Tensor<B, 2>> {
        let wide = self.linear.logits(&model.linear, &inputs.0, precision)?;
        let deep = self.dnn.logits(&model.dnn, &inputs.1, precision)?;
        Ok(wide + deep)
    }

    fn serving_inputs(&self) -> Vec<InputSpec> {
        let mut inputs = self.linear.serving_inputs();
        for input in self.dnn.serving_inputs() {
            if !inputs.iter().any(|i| i.name == input.name) {
                inputs.push(input);
            }
        }
        inputs
    }

    fn check_saved(&self, schema: &Schema) -> Result<()> {
        self.linear.check_saved(schema)?;
        self.dnn.check_saved(schema)
    }
}
