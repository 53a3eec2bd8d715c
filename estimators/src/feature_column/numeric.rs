//! `numeric_column`: a number fed to the model as it is, or standardised.

use datasets::{ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::source::{Accept, InputSources};

/// Standardisation `(x - mean) / std`, saved with the model so serving applies it too.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Normalizer {
    /// Subtracted first.
    pub mean: f32,
    /// Divided by next; 0 is treated as 1 (a constant feature), as `FeatureStats` does.
    pub std: f32,
}

impl Normalizer {
    /// `(x - mean) / std`.
    pub fn apply(&self, x: f32) -> f32 {
        let std = if self.std > 0.0 { self.std } else { 1.0 };
        (x - self.mean) / std
    }
}

/// A numeric feature (TF's `numeric_column`): one `f32` per example, or as many as its
/// shape holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NumericColumn {
    /// The input feature's name.
    pub key: String,
    /// The shape of its values in one example (TF's `shape`; empty: one value). A shape
    /// holding more than one value reads the input columns `key[0]`, `key[1]`, … in row
    /// order, as a feature spec names the values of a fixed feature of that shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shape: Vec<usize>,
    /// Optional standardisation, applied before each value enters the model.
    pub normalizer: Option<Normalizer>,
    /// Whether [`fit_columns`](super::fit_columns) still has to learn the normaliser from
    /// the training input; absent from the saved form once it has.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    learn_normalizer: bool,
}

/// A numeric feature read from input column `key`, fed as it is.
pub fn numeric_column(key: impl Into<String>) -> NumericColumn {
    NumericColumn {
        key: key.into(),
        shape: Vec::new(),
        normalizer: None,
        learn_normalizer: false,
    }
}

/// The most values a numeric column's shape may hold: each is an input column of its own,
/// with a name of its own (a feature spec's bound too).
const MAX_VALUES: usize = 1 << 22;

impl NumericColumn {
    /// Reads as many values as `shape` holds per example (TF's `numeric_column(key,
    /// shape=…)`), from the input columns `key[0]`, `key[1]`, … (or `key` for one value).
    pub fn with_shape(mut self, shape: impl Into<Vec<usize>>) -> Self {
        self.shape = shape.into();
        self
    }

    /// How many values it reads per example: its shape's product (0 if that overflows).
    pub fn width(&self) -> usize {
        (self.shape.iter())
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .unwrap_or(0)
    }

    /// The input columns it reads, in row order: `key` for one value, else `key[i]`.
    pub fn keys(&self) -> Vec<String> {
        match self.width() {
            1 => vec![self.key.clone()],
            n => (0..n).map(|i| format!("{}[{i}]", self.key)).collect(),
        }
    }

    /// Standardises the value: `(x - mean) / std` (a `std` of 0 counts as 1).
    pub fn with_normalizer(mut self, mean: f32, std: f32) -> Self {
        self.normalizer = Some(Normalizer { mean, std });
        self.learn_normalizer = false;
        self
    }

    /// Standardises the value with the mean and (population) standard deviation of the
    /// training input, which [`fit_columns`](super::fit_columns) learns in its one pass
    /// (Keras' `Normalization().adapt(data)`).
    pub fn with_learned_normalizer(mut self) -> Self {
        self.normalizer = None;
        self.learn_normalizer = true;
        self
    }

    /// Whether the normaliser is still to be learned by [`fit_columns`](super::fit_columns).
    pub fn learns_normalizer(&self) -> bool {
        self.learn_normalizer
    }

    /// The column's name: its key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Checks the normaliser and records the key's place in the input.
    pub(crate) fn resolve(
        &self,
        inputs: &mut InputSources,
        schema: &Schema,
        user: &str,
    ) -> Result<()> {
        if self.learn_normalizer {
            return Err(Error::Config(format!(
                "feature column '{user}' learns its normalizer from the training input: pass \
                 the columns through fit_columns (or ResolvedColumns::fit) first"
            )));
        }
        if let Some(n) = &self.normalizer {
            if !n.mean.is_finite() || !n.std.is_finite() || n.std < 0.0 {
                return Err(Error::Config(format!(
                    "feature column '{user}': normalizer mean {} / std {} must be finite, std >= 0",
                    n.mean, n.std
                )));
            }
        }
        let width = self.width();
        if !(1..=MAX_VALUES).contains(&width) {
            return Err(Error::Config(format!(
                "feature column '{user}': shape {:?} must hold from 1 to {MAX_VALUES} values",
                self.shape
            )));
        }
        (self.keys().iter()).try_for_each(|key| inputs.add(schema, key, user, Accept::Numeric))
    }

    /// Every (normalised) value in `example`, in row order.
    pub(crate) fn values(
        &self,
        inputs: &InputSources,
        example: &dyn ColumnarRow,
    ) -> Result<Vec<f32>> {
        (self.keys().iter())
            .map(|key| {
                let reader = NumericReader {
                    key,
                    index: inputs.dense_index(key)?,
                    normalizer: self.normalizer.as_ref(),
                };
                reader.read(example)
            })
            .collect()
    }
}

/// A [`NumericColumn`] with its index in `Example::dense` looked up once.
pub(crate) struct NumericReader<'a> {
    key: &'a str,
    index: usize,
    normalizer: Option<&'a Normalizer>,
}

impl NumericReader<'_> {
    /// The (normalised) value in `example`.
    pub(crate) fn read(&self, example: &dyn ColumnarRow) -> Result<f32> {
        let x = example.dense().get(self.index).copied().ok_or_else(|| {
            Error::Config(format!("feature '{}' is not in the example", self.key))
        })?;
        Ok(self.normalizer.map_or(x, |n| n.apply(x)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizer_standardises_and_treats_zero_std_as_one() {
        let n = Normalizer {
            mean: 2.0,
            std: 4.0,
        };
        assert_eq!(n.apply(10.0), 2.0);
        assert_eq!(n.apply(2.0), 0.0);
        let constant = Normalizer {
            mean: 3.0,
            std: 0.0,
        };
        assert_eq!(constant.apply(5.0), 2.0);
    }
}
