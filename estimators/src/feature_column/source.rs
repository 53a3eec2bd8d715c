//! Where each feature key's value sits in an [`Example`], found in the [`Schema`] once.

use std::borrow::Cow;
use std::collections::BTreeMap;

use datasets::{ColumnType, ColumnarBatch, ColumnarRow, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

/// The position of one input feature in an [`Example`](datasets::Example).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// `Example::dense[index]`; `integer` for an `Int` schema column.
    Dense {
        /// Index in `Example::dense`.
        index: usize,
        /// Whether the schema column is `Int` (class ids, counts) rather than `Float`.
        integer: bool,
    },
    /// `Example::categorical[index]` (a `Category` schema column).
    Categorical {
        /// Index in `Example::categorical`.
        index: usize,
    },
}

/// What kind of input a feature column reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Accept {
    /// A number: a `Float` or `Int` column.
    Numeric,
    /// A category: a `Category` column, or an `Int` column read as its decimal text.
    Categorical,
}

/// One raw input value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Raw<'a> {
    /// From `Example::dense`.
    Number(f32),
    /// From `Example::categorical`.
    Text(&'a str),
}

impl Raw<'_> {
    /// The value as text: a category as it is, a number in its shortest decimal form
    /// (`3` for an `Int` column's 3.0).
    pub(crate) fn token(&self) -> Cow<'_, str> {
        match self {
            Raw::Text(s) => Cow::Borrowed(s),
            Raw::Number(v) if v.fract() == 0.0 && v.abs() < 1e15 => {
                Cow::Owned(format!("{}", *v as i64))
            }
            Raw::Number(v) => Cow::Owned(v.to_string()),
        }
    }
}

/// The input features the columns read, by key, with the example layout they come from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct InputSources {
    sources: BTreeMap<String, InputSource>,
    /// Keys in the order the columns first use them (the serving signature's order).
    order: Vec<String>,
    num_dense: usize,
    num_categorical: usize,
}

impl InputSources {
    /// No sources yet, for examples laid out by `schema`.
    pub(crate) fn new(schema: &Schema) -> Self {
        Self {
            sources: BTreeMap::new(),
            order: Vec::new(),
            num_dense: schema.num_dense(),
            num_categorical: schema.num_categorical(),
        }
    }

    /// Finds `key` in `schema` and records it; `user` is the feature column reading it.
    ///
    /// Errors name the key and list the input's feature columns when the key is missing,
    /// and name both types when the column's type does not fit.
    pub(crate) fn add(
        &mut self,
        schema: &Schema,
        key: &str,
        user: &str,
        accept: Accept,
    ) -> Result<()> {
        let used_by = if user == key {
            String::new()
        } else {
            format!(" (used by '{user}')")
        };
        if schema.label.as_deref() == Some(key) {
            return Err(Error::Config(format!(
                "feature column '{key}'{used_by} is the label column of the input, not a feature"
            )));
        }
        let Some(column) = schema.features().find(|c| c.name == key) else {
            let names: Vec<&str> = schema.features().map(|c| c.name.as_str()).collect();
            return Err(Error::Config(format!(
                "feature column '{key}'{used_by} is not in the input (columns: {})",
                names.join(", ")
            )));
        };
        let fits = match accept {
            Accept::Numeric => column.kind.is_numeric(),
            Accept::Categorical => matches!(column.kind, ColumnType::Category | ColumnType::Int),
        };
        if !fits {
            let wanted = match accept {
                Accept::Numeric => "a numeric input (Float or Int)",
                Accept::Categorical => "a categorical input (Category or Int)",
            };
            return Err(Error::Config(format!(
                "feature column '{user}' needs {wanted}, but the input's '{key}' is {:?}",
                column.kind
            )));
        }
        let source = if column.kind.is_numeric() {
            InputSource::Dense {
                index: schema.dense_index(key).unwrap_or_default(),
                integer: column.kind == ColumnType::Int,
            }
        } else {
            InputSource::Categorical {
                index: schema.categorical_index(key).unwrap_or_default(),
            }
        };
        if self.sources.insert(key.to_string(), source).is_none() {
            self.order.push(key.to_string());
        }
        Ok(())
    }

    /// The recorded keys with their sources, in the order the columns first use them.
    pub fn keys(&self) -> impl Iterator<Item = (&str, InputSource)> + '_ {
        self.order
            .iter()
            .filter_map(|k| self.sources.get(k).map(|s| (k.as_str(), *s)))
    }

    /// Checks that `batch` has the schema's layout.
    pub(crate) fn check_layout(&self, batch: &ColumnarBatch) -> Result<()> {
        if batch.dense_width != self.num_dense {
            return Err(Error::Config(format!(
                "the batch has {} numeric values per example, the input schema has {}",
                batch.dense_width, self.num_dense
            )));
        }
        if batch.categorical.len() != self.num_categorical {
            return Err(Error::Config(format!(
                "the batch has {} category values per example, the input schema has {}",
                batch.categorical.len(),
                self.num_categorical
            )));
        }
        Ok(())
    }

    /// Checks that `row` has the schema's layout.
    pub(crate) fn check_row(&self, row: &dyn ColumnarRow) -> Result<()> {
        let (dense, categorical) = (row.dense().len(), row.categorical_len());
        if dense != self.num_dense || categorical != self.num_categorical {
            return Err(Error::Config(format!(
                "a row has {dense} numeric and {categorical} category values, the input schema \
                 has {} and {}",
                self.num_dense, self.num_categorical
            )));
        }
        Ok(())
    }

    /// A schema holding just the recorded keys, in their recorded order and types, to
    /// resolve saved columns against again: an error when a place is outside the layout or
    /// held by two keys.
    pub(crate) fn saved_schema(&self) -> Result<Schema> {
        let mut dense: Vec<(usize, &str, bool)> = Vec::new();
        let mut categorical: Vec<(usize, &str)> = Vec::new();
        for (key, source) in &self.sources {
            match *source {
                InputSource::Dense { index, integer } if index < self.num_dense => {
                    dense.push((index, key, integer))
                }
                InputSource::Categorical { index } if index < self.num_categorical => {
                    categorical.push((index, key))
                }
                _ => {
                    return Err(Error::Config(format!(
                        "input '{key}': its place {source:?} is outside the layout of {} \
                         numeric and {} category values",
                        self.num_dense, self.num_categorical
                    )))
                }
            }
        }
        dense.sort_unstable();
        categorical.sort_unstable();
        let twice = dense
            .windows(2)
            .find(|w| w[0].0 == w[1].0)
            .map(|w| (w[0].1, w[1].1));
        let twice = twice.or_else(|| {
            let same = categorical.windows(2).find(|w| w[0].0 == w[1].0);
            same.map(|w| (w[0].1, w[1].1))
        });
        if let Some((a, b)) = twice {
            return Err(Error::Config(format!(
                "inputs '{a}' and '{b}' are recorded at the same place"
            )));
        }
        let schema = dense
            .into_iter()
            .fold(Schema::new(), |s, (_, key, integer)| {
                s.add(
                    key,
                    if integer {
                        ColumnType::Int
                    } else {
                        ColumnType::Float
                    },
                )
            });
        Ok(categorical
            .into_iter()
            .fold(schema, |s, (_, key)| s.category(key)))
    }

    /// Whether `self` and `other` record the same keys, in the same order, as the same kind
    /// of value (their places aside).
    pub(crate) fn same_keys(&self, other: &InputSources) -> bool {
        let kind = |s: InputSource| match s {
            InputSource::Dense { integer, .. } => Some(integer),
            InputSource::Categorical { .. } => None,
        };
        self.order == other.order
            && self.sources.len() == other.sources.len()
            && self
                .keys()
                .zip(other.keys())
                .all(|(a, b)| kind(a.1) == kind(b.1))
    }

    /// Where `key` was found, if it was.
    pub(crate) fn source(&self, key: &str) -> Option<InputSource> {
        self.sources.get(key).copied()
    }

    /// The raw value of `key` in `example` (whose layout was checked).
    pub(crate) fn raw<'a>(&self, key: &str, example: &'a dyn ColumnarRow) -> Result<Raw<'a>> {
        let missing = || Error::Config(format!("feature '{key}' is not in the example"));
        match self.sources.get(key) {
            Some(InputSource::Dense { index, .. }) => example
                .dense()
                .get(*index)
                .map(|v| Raw::Number(*v))
                .ok_or_else(missing),
            Some(&InputSource::Categorical { index }) => (index < example.categorical_len())
                .then(|| Raw::Text(example.categorical(index)))
                .ok_or_else(missing),
            None => Err(Error::Config(format!(
                "feature '{key}' was not resolved against the input schema"
            ))),
        }
    }

    /// The index in `Example::dense` of numeric feature `key`.
    pub(crate) fn dense_index(&self, key: &str) -> Result<usize> {
        match self.sources.get(key) {
            Some(InputSource::Dense { index, .. }) => Ok(*index),
            Some(InputSource::Categorical { .. }) => Err(Error::Config(format!(
                "feature '{key}' is a category, not a number"
            ))),
            None => Err(Error::Config(format!(
                "feature '{key}' was not resolved against the input schema"
            ))),
        }
    }
}
