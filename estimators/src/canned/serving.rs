//! The canned estimators served with no code (`estimator-serve`): request instances, or a
//! Predict call's tensors, laid out by the schema the estimator was trained on, and their
//! head's predictions stacked into tensors by key.

use super::{CannedEstimator, Task};
use crate::network::Network;
use datasets::{ColumnType, ColumnarBatch, Example, StringColumn};
use estimator::export::{
    float_input, text_input, InputTensors, Instance, ServableEstimator, ServingTensor, Signature,
    TensorElements,
};
use estimator::head::HeadPrediction;

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

    /// Each feature's column straight from its input's tensor (a feature the signature
    /// does not take is empty text or 0, as from instances). Every input is scalar, one
    /// element a row.
    fn batch_from_tensors(
        &self,
        signature: &Signature,
        inputs: &InputTensors,
    ) -> estimator::Result<ColumnarBatch> {
        let rows = inputs.batch();
        if rows == 0 {
            return self.batch_from_instances(signature, &[]);
        }
        let schema = self.schema();
        let features: Vec<_> = schema.features().collect();
        let dense_width = (features.iter())
            .filter(|c| c.kind != ColumnType::Category)
            .count();
        let mut batch = ColumnarBatch::default();
        batch.rows = rows;
        batch.dense_width = dense_width;
        batch.dense = vec![0.0; rows * dense_width];
        let mut dense_column = 0;
        for column in features {
            let elements = inputs.get(&column.name).map(|tensor| &tensor.elements);
            match (column.kind == ColumnType::Category, elements) {
                (true, Some(TensorElements::String(values))) => {
                    batch
                        .categorical
                        .push(values.iter().map(String::as_str).collect());
                }
                (true, None) => {
                    batch
                        .categorical
                        .push(std::iter::repeat_n("", rows).collect::<StringColumn>());
                }
                (false, Some(TensorElements::Float32(values))) => {
                    let cells = batch
                        .dense
                        .iter_mut()
                        .skip(dense_column)
                        .step_by(dense_width);
                    cells.zip(values).for_each(|(cell, &x)| *cell = x);
                    dense_column += 1;
                }
                (false, None) => dense_column += 1,
                // Another signature than the schema's: the instances' rules say why.
                _ => return self.batch_from_instances(signature, &inputs.instances()),
            }
        }
        batch.check()?;
        Ok(batch)
    }

    fn prediction_tensor(
        &self,
        predictions: &[HeadPrediction],
        key: &str,
    ) -> Option<ServingTensor> {
        HeadPrediction::stacked(predictions, key)
    }
}

#[cfg(test)]
mod tests {
    use datasets::Schema;
    use estimator::{Estimator, RunConfig};
    use serde_json::json;

    use super::*;
    use crate::feature_column::{
        categorical_column_with_vocabulary_list, indicator_column, numeric_column,
    };
    use crate::DnnClassifier;

    #[test]
    fn tensors_lay_out_the_batch_instances_do() {
        // `unused` is a feature no column reads: the signature leaves it out.
        let schema = Schema::new()
            .float("x")
            .category("colour")
            .float("unused")
            .float("y")
            .label("label");
        let colour = categorical_column_with_vocabulary_list("colour", ["red", "blue"]);
        let columns = [
            numeric_column("x").into(),
            indicator_column(colour).into(),
            numeric_column("y").into(),
        ];
        let est = DnnClassifier::new(RunConfig::new("unused"), &schema, columns, [4], 2).unwrap();
        let signature = est.serving_signature();
        let rows = [(1.5, "red", -2.0), (0.25, "green", 3.0), (-1.0, "", 0.5)];
        let instances: Vec<Instance> = (rows.iter())
            .map(|(x, colour, y)| json!({"x": x, "colour": colour, "y": y}))
            .map(|row| row.as_object().unwrap().clone())
            .collect();
        let elements = (signature.inputs.iter())
            .map(|input| match input.name.as_str() {
                "x" => TensorElements::Float32(rows.iter().map(|r| r.0).collect()),
                "colour" => TensorElements::String(rows.iter().map(|r| r.1.to_string()).collect()),
                "y" => TensorElements::Float32(rows.iter().map(|r| r.2).collect()),
                other => panic!("unexpected input {other}"),
            })
            .collect();
        let inputs = InputTensors::new(&signature, rows.len(), elements).unwrap();
        let from_tensors = est.batch_from_tensors(&signature, &inputs).unwrap();
        let from_instances = est.batch_from_instances(&signature, &instances).unwrap();
        assert_eq!(from_tensors.rows, 3);
        assert_eq!(from_tensors.dense_width, 3);
        assert_eq!(from_tensors.dense, from_instances.dense);
        assert_eq!(
            from_tensors.dense,
            [1.5, 0.0, -2.0, 0.25, 0.0, 3.0, -1.0, 0.0, 0.5]
        );
        assert_eq!(from_tensors.categorical, from_instances.categorical);
        let empty = InputTensors::new(
            &signature,
            0,
            vec![
                TensorElements::Float32(Vec::new()),
                TensorElements::String(Vec::new()),
                TensorElements::Float32(Vec::new()),
            ],
        );
        let empty = est.batch_from_tensors(&signature, &empty.unwrap()).unwrap();
        assert!(empty.is_empty());
    }
}
