//! The canned estimators served with no code (`estimator-serve`): request instances laid
//! out by the schema the estimator was trained on, read with the same checked helpers a
//! user's estimator has.

use super::{CannedEstimator, Task};
use crate::network::Network;
use datasets::{ColumnType, ColumnarBatch, Example};
use estimator::export::{float_input, text_input, Instance, ServableEstimator, Signature};

impl<N: Network + 'static, K: Task + 'static> ServableEstimator for CannedEstimator<N, K> {
    fn batch_from_instances(
        &self,
        _signature: &Signature,
        instances: &[Instance],
    ) -> estimator::Result<ColumnarBatch> {
        // The server has checked every instance against the signature, whose inputs are
        // the schema's features: each is there, of its type.
        let schema = self.schema();
        let rows = instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                let mut example = Example::default();
                for column in schema.features() {
                    if column.kind == ColumnType::Category {
                        example
                            .categorical
                            .push(if instance.contains_key(&column.name) {
                                text_input(instance, i, &column.name)?
                            } else {
                                String::new()
                            });
                    } else {
                        example.dense.push(if instance.contains_key(&column.name) {
                            float_input(instance, i, &column.name)?
                        } else {
                            0.0
                        });
                    }
                }
                Ok(example)
            })
            .collect::<estimator::Result<Vec<_>>>()?;
        Ok(ColumnarBatch::from_examples(&rows)?)
    }
}
