//! How the click-through-rate model is served over TF Serving's REST API: a request
//! instance's features, by name, laid out in the order of the features' schema (where the
//! resolved columns read them). The server has already checked each instance against the
//! export's signature, so every input is there with its type; a feature of the schema that
//! no column reads is not an input, and takes its empty value.
//!
//! The trait is the core crate's, so this library (and the training binary) does not link
//! the HTTP server; only `ctr_estimator_serve` does.

use estimator::datasets::{ColumnType, ColumnarBatch, Example};
use estimator::export::{float_input, text_input, Instance, ServableEstimator, Signature};

use crate::{ctr_features_schema, CtrClassifier};

impl ServableEstimator for CtrClassifier {
    fn batch_from_instances(
        &self,
        _signature: &Signature,
        instances: &[Instance],
    ) -> estimator::Result<ColumnarBatch> {
        let schema = ctr_features_schema();
        let rows = instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                let mut example = Example::default();
                for column in schema.features() {
                    let given = instance.contains_key(&column.name);
                    if column.kind == ColumnType::Category {
                        example.categorical.push(match given {
                            true => text_input(instance, i, &column.name)?,
                            false => String::new(),
                        });
                    } else {
                        example.dense.push(match given {
                            true => float_input(instance, i, &column.name)?,
                            false => 0.0,
                        });
                    }
                }
                Ok(example)
            })
            .collect::<estimator::Result<Vec<_>>>()?;
        Ok(ColumnarBatch::from_examples(&rows)?)
    }
}
