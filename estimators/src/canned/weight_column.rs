//! [`WeightColumn`]: a numeric input column giving each example's weight in the loss.

use datasets::{ColumnarBatch, ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

/// An input column whose value weights each example in the loss and metrics (TF's
/// `weight_column`). It is read from `Example::dense`; it is not a feature unless a
/// feature column also names it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WeightColumn {
    /// The input column's name.
    pub name: String,
    /// Its index in `Example::dense`.
    pub index: usize,
}

impl WeightColumn {
    /// Finds numeric input column `name` in `schema`; errors name the column.
    pub fn resolve(name: &str, schema: &Schema) -> Result<Self> {
        if schema.label.as_deref() == Some(name) {
            return Err(Error::Config(format!(
                "weight column '{name}' is the label column of the input"
            )));
        }
        let Some(column) = schema.features().find(|c| c.name == name) else {
            let names: Vec<&str> = schema.features().map(|c| c.name.as_str()).collect();
            return Err(Error::Config(format!(
                "weight column '{name}' is not in the input (columns: {})",
                names.join(", ")
            )));
        };
        match schema.dense_index(name) {
            Some(index) => Ok(Self {
                name: name.to_string(),
                index,
            }),
            None => Err(Error::Config(format!(
                "weight column '{name}' must be numeric (Float or Int), but is {:?}",
                column.kind
            ))),
        }
    }

    /// The weight of every example of `batch`: finite and non-negative, or an error naming
    /// the column and the example.
    pub fn weights(&self, batch: &ColumnarBatch) -> Result<Vec<f32>> {
        batch
            .rows()
            .enumerate()
            .map(|(i, row)| match row.dense().get(self.index) {
                Some(&w) if w.is_finite() && w >= 0.0 => Ok(w),
                Some(&w) => Err(Error::Config(format!(
                    "weight column '{}': example {i} of the batch has weight {w} (weights must \
                     be finite and >= 0)",
                    self.name
                ))),
                None => Err(Error::Config(format!(
                    "weight column '{}': example {i} of the batch has no value for it",
                    self.name
                ))),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Example;

    fn batch(rows: &[Example]) -> ColumnarBatch {
        ColumnarBatch::from_examples(rows).unwrap()
    }

    #[test]
    fn resolves_numeric_columns_and_names_the_column_in_errors() {
        let schema = Schema::new()
            .float("x")
            .category("c")
            .int("w")
            .int("y")
            .label("y");
        let w = WeightColumn::resolve("w", &schema).unwrap();
        assert_eq!(w.index, 1);
        let missing = WeightColumn::resolve("z", &schema).unwrap_err().to_string();
        assert!(missing.contains("weight column 'z' is not in the input (columns: x, c, w)"));
        let category = WeightColumn::resolve("c", &schema).unwrap_err().to_string();
        assert!(category.contains("weight column 'c' must be numeric"));
        assert!(WeightColumn::resolve("y", &schema).is_err());
    }

    #[test]
    fn weights_are_read_and_checked() {
        let w = WeightColumn {
            name: "w".into(),
            index: 1,
        };
        let ex = |v: f32| Example {
            dense: vec![0.0, v],
            ..Example::default()
        };
        assert_eq!(w.weights(&batch(&[ex(1.0), ex(0.5)])).unwrap(), [1.0, 0.5]);
        let err = w
            .weights(&batch(&[ex(1.0), ex(-2.0)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("weight column 'w': example 1 of the batch has weight -2"));
        assert!(w.weights(&batch(&[Example::default()])).is_err());
    }
}
