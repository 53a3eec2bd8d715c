//! `categorical_column_with_identity`: an integer that is its own id.

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::source::{Accept, InputSources, Raw};

/// An integer feature used as the id itself (TF's `categorical_column_with_identity`):
/// values `0..num_buckets`. Reads an `Int` column, or a `Category` column of integer text.
/// A value out of range (or not an integer) takes `default_value`, or is an error naming
/// the column when there is none.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct IdentityColumn {
    /// The input feature's name.
    pub key: String,
    /// Number of ids (> 0).
    pub num_buckets: usize,
    /// The id of an out-of-range value, if any.
    pub default_value: Option<usize>,
}

/// An integer feature from input column `key` with ids `0..num_buckets`.
pub fn categorical_column_with_identity(
    key: impl Into<String>,
    num_buckets: usize,
) -> IdentityColumn {
    IdentityColumn {
        key: key.into(),
        num_buckets,
        default_value: None,
    }
}

impl IdentityColumn {
    /// Sends out-of-range values to id `id` instead of failing.
    pub fn with_default_value(mut self, id: usize) -> Self {
        self.default_value = Some(id);
        self
    }

    /// The column's name: its key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Number of ids.
    pub fn num_buckets(&self) -> usize {
        self.num_buckets
    }

    /// Checks the sizes and records the key's place in the input.
    pub(crate) fn resolve(&self, inputs: &mut InputSources, schema: &Schema) -> Result<()> {
        if self.num_buckets == 0 {
            return Err(Error::Config(format!(
                "feature column '{}': num_buckets must be at least 1",
                self.key
            )));
        }
        if let Some(d) = self.default_value.filter(|&d| d >= self.num_buckets) {
            return Err(Error::Config(format!(
                "feature column '{}': default_value {d} is not in [0, {})",
                self.key, self.num_buckets
            )));
        }
        inputs.add(schema, &self.key, &self.key, Accept::Categorical)
    }

    /// The id of the value in `example`.
    pub(crate) fn id(&self, inputs: &InputSources, example: &dyn ColumnarRow) -> Result<usize> {
        let raw = inputs.raw(&self.key, example)?;
        let value = match raw {
            Raw::Number(v) if v.fract() == 0.0 && v >= 0.0 => Some(v as u64),
            Raw::Number(_) => None,
            Raw::Text(s) => s.trim().parse::<u64>().ok(),
        };
        match value.filter(|&v| v < self.num_buckets as u64) {
            Some(v) => Ok(v as usize),
            None => self.default_value.ok_or_else(|| {
                Error::Config(format!(
                    "feature column '{}': value {} is out of range [0, {}) (set a default_value)",
                    self.key,
                    raw.token(),
                    self.num_buckets
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::Example;

    fn setup(column: &IdentityColumn) -> InputSources {
        let schema = Schema::new().int("day").category("code");
        let mut inputs = InputSources::new(&schema);
        column.resolve(&mut inputs, &schema).unwrap();
        inputs
    }

    fn ex(day: f32, code: &str) -> Example {
        Example {
            dense: vec![day],
            categorical: vec![code.into()],
            ..Example::default()
        }
    }

    #[test]
    fn in_range_values_are_their_own_id() {
        let day = categorical_column_with_identity("day", 7);
        let inputs = setup(&day);
        assert_eq!(day.id(&inputs, &ex(0.0, "")).unwrap(), 0);
        assert_eq!(day.id(&inputs, &ex(6.0, "")).unwrap(), 6);
        let code = categorical_column_with_identity("code", 3);
        let inputs = setup(&code);
        assert_eq!(code.id(&inputs, &ex(0.0, "2")).unwrap(), 2);
    }

    #[test]
    fn out_of_range_is_an_error_naming_the_column_unless_there_is_a_default() {
        let day = categorical_column_with_identity("day", 7);
        let inputs = setup(&day);
        let err = day.id(&inputs, &ex(7.0, "")).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid configuration: feature column 'day': value 7 is out of range [0, 7) \
             (set a default_value)"
        );
        assert!(day.id(&inputs, &ex(-1.0, "")).is_err());
        let lenient = day.with_default_value(0);
        assert_eq!(lenient.id(&inputs, &ex(7.0, "")).unwrap(), 0);
        assert_eq!(lenient.id(&inputs, &ex(2.5, "")).unwrap(), 0);
        let code = categorical_column_with_identity("code", 3);
        let inputs = setup(&code);
        let err = code.id(&inputs, &ex(0.0, "x")).unwrap_err().to_string();
        assert!(err.contains("feature column 'code': value x is out of range [0, 3)"));
    }

    #[test]
    fn a_default_outside_the_range_is_rejected() {
        let schema = Schema::new().int("day");
        let mut inputs = InputSources::new(&schema);
        let bad = categorical_column_with_identity("day", 7).with_default_value(7);
        assert!(bad.resolve(&mut inputs, &schema).is_err());
    }
}
