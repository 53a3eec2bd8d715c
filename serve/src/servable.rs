//! [`Servable`]: one loaded model version, as the server calls it; [`ServableEstimator`]:
//! what an estimator adds to its export to be served.

use std::path::Path;
use std::sync::Mutex;

use burn::tensor::backend::Backend;
use estimator::{CpuBackend, Estimator, Predictor, Signature};
use serde_json::{Map, Value};

use crate::error::ServeError;

/// One request instance: feature name → JSON value.
pub type Instance = Map<String, Value>;

/// What an estimator needs, beyond its export, to answer TF Serving requests: turn request
/// instances into its batch and its predictions into JSON.
///
/// Every canned estimator implements it; a user estimator implements it to be served by a
/// server built with [`Loaders::with`](crate::Loaders::with).
pub trait ServableEstimator: Estimator + serde::de::DeserializeOwned + Send + 'static {
    /// A batch of `instances`, each holding every input of the signature by name. Errors
    /// name the instance (by index) and the feature.
    fn batch_from_instances(
        &self,
        signature: &Signature,
        instances: &[Instance],
    ) -> Result<Self::Batch, ServeError>;

    /// A prediction as JSON: an object with one member per output key.
    fn prediction_json(&self, prediction: &Self::Prediction) -> Value;
}

/// A loaded model version.
pub trait Servable: Send + Sync {
    /// The export's serving signature.
    fn signature(&self) -> &Signature;

    /// One prediction (an object of output key → value) per instance.
    fn predict(&self, instances: &[Instance]) -> Result<Vec<Map<String, Value>>, ServeError>;
}

/// An export loaded with [`Predictor`] on a device of backend `B`; calls are serialised
/// (the model is not shared between threads while it runs).
pub struct Served<E: ServableEstimator, B: Backend = CpuBackend> {
    predictor: Mutex<Predictor<E, B>>,
    signature: Signature,
}

impl<E: ServableEstimator, B: Backend> Served<E, B> {
    /// Loads the export in `dir` onto `device`.
    pub fn load_on(dir: &Path, device: B::Device) -> estimator::Result<Self> {
        let predictor = Predictor::<E, B>::load_on(dir, device)?;
        Ok(Self {
            signature: predictor.signature().clone(),
            predictor: Mutex::new(predictor),
        })
    }
}

impl<E: ServableEstimator, B: Backend> Servable for Served<E, B> {
    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, instances: &[Instance]) -> Result<Vec<Map<String, Value>>, ServeError> {
        let predictor = self.predictor.lock().unwrap_or_else(|e| e.into_inner());
        let batch = predictor
            .estimator()
            .batch_from_instances(&self.signature, instances)?;
        let predictions = predictor
            .predict(&batch)
            .map_err(|e| ServeError::Internal(e.to_string()))?;
        Ok(predictions
            .iter()
            .map(|p| match predictor.estimator().prediction_json(p) {
                Value::Object(map) => map,
                other => Map::from_iter([("output".to_string(), other)]),
            })
            .collect())
    }
}
