//! The inputs a served export of resolved columns takes: each feature key the columns read,
//! but the values of a shaped numeric column as one input of its shape, under its key (TF's
//! serving input of a `numeric_column(key, shape=…)`).

use estimator::export::{DType, InputSpec};
use estimator::{Error, Result};

use super::{FeatureColumn, ResolvedColumns};
use crate::feature_column::source::{InputSource, InputSources};
use crate::feature_column::{CategoricalColumn, CrossSource, CrossedColumn, NumericColumn};

impl ResolvedColumns {
    /// The serving inputs, in the order the columns first read them: a key's (numeric:
    /// `Float32`; category: `String`), or a shaped numeric column's, `Float32` of its shape,
    /// which takes the place of the keys it reads.
    pub fn serving_inputs(&self) -> Vec<InputSpec> {
        let shaped = shaped_columns(&self.columns);
        let mut inputs: Vec<InputSpec> = Vec::new();
        for (key, source) in self.inputs.keys() {
            let owner = shaped.iter().find(|c| c.keys().iter().any(|k| k == key));
            let input = match (owner, source) {
                (Some(column), _) => InputSpec {
                    name: column.key.clone(),
                    dtype: DType::Float32,
                    shape: column.shape.clone(),
                },
                (None, InputSource::Dense { .. }) => scalar(key, DType::Float32),
                (None, InputSource::Categorical { .. }) => scalar(key, DType::String),
            };
            if !inputs.iter().any(|i| i.name == input.name) {
                inputs.push(input);
            }
        }
        inputs
    }
}

fn scalar(key: &str, dtype: DType) -> InputSpec {
    InputSpec {
        name: key.to_string(),
        dtype,
        shape: Vec::new(),
    }
}

/// The numeric columns given a shape, on their own or bucketized (also inside an indicator,
/// embedding or crossed column).
fn shaped_columns(columns: &[FeatureColumn]) -> Vec<&NumericColumn> {
    let mut sources = Vec::new();
    for column in columns {
        match column {
            FeatureColumn::Numeric(c) => sources.push(c),
            FeatureColumn::Bucketized(c) => sources.push(&c.source),
            FeatureColumn::Crossed(c) => crossed_sources(c, &mut sources),
            FeatureColumn::Indicator(c) => categorical_sources(&c.categorical, &mut sources),
            FeatureColumn::Embedding(c) => categorical_sources(&c.categorical, &mut sources),
            _ => {}
        }
    }
    sources.retain(|c| !c.shape.is_empty());
    sources
}

/// The numeric sources `column` bucketizes, itself or in its cross's components.
fn categorical_sources<'c>(column: &'c CategoricalColumn, into: &mut Vec<&'c NumericColumn>) {
    match column {
        CategoricalColumn::Bucketized(c) => into.push(&c.source),
        CategoricalColumn::Crossed(c) => crossed_sources(c, into),
        _ => {}
    }
}

fn crossed_sources<'c>(cross: &'c CrossedColumn, into: &mut Vec<&'c NumericColumn>) {
    for key in &cross.keys {
        if let CrossSource::Column(c) = key {
            categorical_sources(c, into);
        }
    }
}

/// A shaped numeric column's key names its serving input, so no column may read an input
/// of that name: a request could not tell the two apart; and two shaped columns of one key
/// (a number and its buckets) are one input, of one shape.
pub(super) fn check_shaped_names(columns: &[FeatureColumn], inputs: &InputSources) -> Result<()> {
    let shaped = shaped_columns(columns);
    for (k, column) in shaped.iter().enumerate() {
        if let Some(other) =
            (shaped[..k].iter()).find(|o| o.key == column.key && o.shape != column.shape)
        {
            return Err(Error::Config(format!(
                "feature columns of key '{}' have the shapes {:?} and {:?}; its serving input \
                 has one",
                column.key, other.shape, column.shape
            )));
        }
    }
    for column in shaped {
        let own = column.keys();
        if !own.contains(&column.key) && inputs.source(&column.key).is_some() {
            return Err(Error::Config(format!(
                "feature column '{}' of shape {:?} is served as the input '{}', which another \
                 column reads as an input column of its own",
                column.key, column.shape, column.key
            )));
        }
    }
    Ok(())
}
