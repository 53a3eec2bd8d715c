//! [`ServableEstimator`]: what an estimator adds to its export to be served over TF
//! Serving's REST API — request instances into its batch, its predictions into JSON.
//!
//! It lives in the core crate, not in the server's, so that a user's library crate can
//! implement it without linking the HTTP stack: only the program that serves depends on
//! `estimator-serve`, which re-exports these names.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{InputTensors, ServingTensor, Signature};
use crate::error::Result;
use crate::estimator::Estimator;

/// One request instance: input name → JSON value.
pub type Instance = Map<String, Value>;

/// What an estimator needs, beyond its export, to answer TF Serving requests.
///
/// The server checks every instance against the export's signature before calling
/// [`batch_from_instances`](ServableEstimator::batch_from_instances) ([`check_instances`](
/// super::check_instances): no unknown or missing input, each of its type and shape, numbers
/// within float32), so an implementation only lays the values out, reading them with
/// [`float_input`](super::float_input), [`floats_input`](super::floats_input) and
/// [`text_input`](super::text_input).
pub trait ServableEstimator: Estimator + Send + 'static {
    /// A batch of `instances` (already checked against `signature`). An instance that
    /// does not fit is an [`Error::Request`](crate::Error::Request) naming it (by index)
    /// and the input, which the server answers with 400; any other error is a 500.
    fn batch_from_instances(
        &self,
        signature: &Signature,
        instances: &[Instance],
    ) -> Result<Self::Batch>;

    /// A batch of a request's `inputs` as tensors (a gRPC Predict call's), each already of
    /// its input's type and shape. The default cuts them into instances for
    /// [`batch_from_instances`](ServableEstimator::batch_from_instances); an estimator that
    /// lays the tensors out itself serves such a call without a JSON value per element.
    fn batch_from_tensors(
        &self,
        signature: &Signature,
        inputs: &InputTensors,
    ) -> Result<Self::Batch> {
        self.batch_from_instances(signature, &inputs.instances())
    }

    /// Output `key` of `predictions` as one tensor, the batch first, when the estimator
    /// stacks it itself. `None`, the default: the server stacks each prediction's
    /// [`prediction_json`](ServableEstimator::prediction_json) value of `key`.
    fn prediction_tensor(
        &self,
        _predictions: &[Self::Prediction],
        _key: &str,
    ) -> Option<ServingTensor> {
        None
    }

    /// A prediction as JSON: an object with one member per output key. The default is the
    /// prediction's serde form with every `f32` in its shortest digits
    /// ([`prediction_json`]).
    fn prediction_json(&self, prediction: &Self::Prediction) -> Value {
        prediction_json(prediction)
    }
}

/// `value` as JSON with each `f32` written in the shortest digits that read back as it
/// (`0.26313546`, as `predict` output writes it), not as the `f64` it widens to
/// (`0.26313546299934387`, what `serde_json::to_value` gives). `null` for what JSON text
/// cannot hold either (a map whose keys are not strings, numbers or booleans).
pub fn prediction_json<T: Serialize + ?Sized>(value: &T) -> Value {
    super::prediction_value::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Prediction {
        probabilities: Vec<f32>,
        class_id: u32,
    }

    #[test]
    fn f32_outputs_keep_their_shortest_digits() {
        let p = Prediction {
            probabilities: vec![0.263_135_46, 0.9998386],
            class_id: 1,
        };
        let json = prediction_json(&p);
        assert_eq!(json["probabilities"].to_string(), "[0.26313546,0.9998386]");
        assert_eq!(json["class_id"], 1);
        // What a hand-written `to_value` would have answered.
        assert!(serde_json::to_value(&p.probabilities)
            .unwrap()
            .to_string()
            .contains("0.26313546299934387"));
    }
}
