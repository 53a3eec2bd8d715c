//! The canned estimators served with no code (`estimator-serve`): request instances, or a
//! Predict call's tensors, laid out by the schema the estimator was trained on, and their
//! head's predictions stacked into tensors by key.

use std::collections::HashMap;

use super::{CannedEstimator, Task};
use crate::feature_column::numeric_column;
use crate::network::Network;
use datasets::{ColumnType, ColumnarBatch, Example, StringColumn};
use estimator::export::{
    float_input, floats_input, text_input, DType, InputSpec, InputTensors, Instance,
    ServableEstimator, ServingTensor, Signature, TensorElements,
};
use estimator::head::HeadPrediction;

impl<N: Network + 'static, K: Task + 'static> ServableEstimator for CannedEstimator<N, K> {
    fn batch_from_instances(
        &self,
        signature: &Signature,
        instances: &[Instance],
    ) -> estimator::Result<ColumnarBatch> {
        // The server has checked every instance against the signature, whose inputs are
        // the schema's features (a shaped numeric column's under its key): each is there,
        // of its type and shape.
        let schema = self.schema();
        let elements = shaped_elements(signature);
        let rows = instances
            .iter()
            .enumerate()
            .map(|(i, instance)| {
                // Each shaped input's values, read once.
                let shaped = (signature.inputs.iter())
                    .map(|input| match is_shaped(input) {
                        true => floats_input(instance, i, &input.name).map(Some),
                        false => Ok(None),
                    })
                    .collect::<estimator::Result<Vec<_>>>()?;
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
                    } else if let Some(&(input, element)) = elements.get(&column.name) {
                        let values = shaped[input].as_deref().unwrap_or_default();
                        example
                            .dense
                            .push(values.get(element).copied().unwrap_or(0.0));
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

    /// Each feature's column straight from its input's tensor, or from its place in a
    /// shaped input's rows (a feature the signature does not take is empty text or 0, as
    /// from instances).
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
        let elements = shaped_elements(signature);
        let mut batch = ColumnarBatch::default();
        batch.rows = rows;
        batch.dense_width = dense_width;
        batch.dense = vec![0.0; rows * dense_width];
        let mut dense_column = 0;
        for column in features {
            // The input holding the column's values, the first of them, and its row width.
            let (name, first, width) = match elements.get(&column.name) {
                Some(&(input, element)) => {
                    let input = &signature.inputs[input];
                    (input.name.as_str(), element, input.shape.iter().product())
                }
                None => (column.name.as_str(), 0, 1),
            };
            let elements = inputs.get(name).map(|tensor| &tensor.elements);
            match (column.kind == ColumnType::Category, elements) {
                (true, Some(TensorElements::String(values))) if width == 1 => {
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
                    let column = values.iter().skip(first).step_by(width);
                    cells.zip(column).for_each(|(cell, &x)| *cell = x);
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

/// Whether `input` is a shaped numeric column's (its values several input columns).
fn is_shaped(input: &InputSpec) -> bool {
    input.dtype == DType::Float32 && !input.shape.is_empty()
}

/// For each input column a shaped input holds: that input's place in the signature and the
/// column's place in its values (row order, named as the numeric column reads them).
fn shaped_elements(signature: &Signature) -> HashMap<String, (usize, usize)> {
    let mut elements = HashMap::new();
    for (place, input) in signature.inputs.iter().enumerate() {
        if is_shaped(input) {
            let column = numeric_column(&input.name).with_shape(input.shape.clone());
            for (element, key) in column.keys().into_iter().enumerate() {
                elements.entry(key).or_insert((place, element));
            }
        }
    }
    elements
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

    #[test]
    fn a_shaped_input_fills_the_columns_its_numeric_column_reads() {
        let schema = Schema::new()
            .float("x[0]")
            .category("colour")
            .float("x[1]")
            .label("label");
        let colour = categorical_column_with_vocabulary_list("colour", ["red", "blue"]);
        let columns = [
            numeric_column("x").with_shape([2]).into(),
            indicator_column(colour).into(),
        ];
        let est = DnnClassifier::new(RunConfig::new("unused"), &schema, columns, [4], 2).unwrap();
        let signature = est.serving_signature();
        let shapes: Vec<(&str, &[usize])> = (signature.inputs.iter())
            .map(|input| (input.name.as_str(), input.shape.as_slice()))
            .collect();
        assert_eq!(shapes, [("x", &[2][..]), ("colour", &[][..])]);
        let rows = [([1.5, -2.0], "red"), ([0.25, 3.0], "blue")];
        let instances: Vec<Instance> = (rows.iter())
            .map(|(x, colour)| json!({"x": x, "colour": colour}))
            .map(|row| row.as_object().unwrap().clone())
            .collect();
        let elements = vec![
            TensorElements::Float32(rows.iter().flat_map(|r| r.0).collect()),
            TensorElements::String(rows.iter().map(|r| r.1.to_string()).collect()),
        ];
        let inputs = InputTensors::new(&signature, rows.len(), elements).unwrap();
        let from_tensors = est.batch_from_tensors(&signature, &inputs).unwrap();
        let from_instances = est.batch_from_instances(&signature, &instances).unwrap();
        // x[0] and x[1] in the schema's dense order, each row's from its input's values.
        assert_eq!(from_tensors.dense, [1.5, -2.0, 0.25, 3.0]);
        assert_eq!(from_tensors, from_instances);
    }
}
