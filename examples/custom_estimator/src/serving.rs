//! How the Iris MLP is served over TF Serving's REST API: a request instance's `features`
//! (four numbers) become an unlabelled example. The server has already checked each
//! instance against the export's signature (no unknown or missing input, four float32
//! numbers), so this only lays the values out.
//!
//! The trait is the core crate's, so this library (and the training binary) does not link
//! the HTTP server; only `custom_estimator_serve` does.

use estimator::datasets::Example;
use estimator::export::{floats_input, Instance, ServableEstimator};
use estimator::Signature;

use crate::IrisClassifier;

impl ServableEstimator for IrisClassifier {
    fn batch_from_instances(
        &self,
        _signature: &Signature,
        instances: &[Instance],
    ) -> estimator::Result<Vec<Example>> {
        instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                Ok(Example {
                    dense: floats_input(instance, i, "features")?,
                    ..Example::default()
                })
            })
            .collect()
    }
}
