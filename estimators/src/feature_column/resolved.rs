//! [`ResolvedColumns`]: feature columns checked against a schema, ready to transform
//! batches.

use datasets::{Example, Schema};
use estimator::export::DType;
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::batch::TransformedBatch;
use super::column::FeatureColumn;
use super::embedding::EmbeddingColumn;
use super::source::{InputSource, InputSources};

/// How columns feed the model family.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// For DNNs: numeric values, one-hot bucketized and indicator columns in the dense
    /// matrix, embedding columns as ids; a bare categorical column is an error (wrap it in
    /// `indicator_column` or `embedding_column`, as TF requires).
    Dnn,
    /// For linear models: numeric and indicator columns in the dense matrix, embedding
    /// columns as ids, and categorical, crossed and bucketized columns as *sparse* ids.
    ///
    /// A linear model's logits are `dense · W + Σ_columns weight[column][id] + bias`; the
    /// per-column weights are one Burn `Embedding` of width `logits_dimension` over all
    /// sparse columns' ids (offset per column), which is a one-hot product without
    /// building the one-hot matrix (crosses can have many buckets).
    Linear,
}

/// Feature columns resolved against an input [`Schema`]: every key found, every type
/// checked, so that [`ResolvedColumns::transform`] only reads. Serialisable, so an export
/// carries everything (vocabularies, normalisers, positions) that serving needs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ResolvedColumns {
    layout: Layout,
    columns: Vec<FeatureColumn>,
    inputs: InputSources,
}

impl ResolvedColumns {
    /// Checks `columns` against `schema` for `layout`.
    ///
    /// Errors name the column at fault: a key missing from the input ("feature column
    /// 'petal_width' is not in the input (columns: …)"), a key of the wrong type, a key
    /// that is the label, an invalid parameter, a duplicate name, a bare categorical
    /// column in a DNN, or no columns at all.
    pub fn resolve(
        columns: impl IntoIterator<Item = FeatureColumn>,
        schema: &Schema,
        layout: Layout,
    ) -> Result<Self> {
        let columns: Vec<FeatureColumn> = columns.into_iter().collect();
        if columns.is_empty() {
            return Err(Error::Config("no feature columns given".into()));
        }
        let mut inputs = InputSources::new(schema);
        for (i, column) in columns.iter().enumerate() {
            let name = column.name();
            if columns[..i].iter().any(|c| c.name() == name) {
                return Err(Error::Config(format!(
                    "feature column '{name}' is given twice"
                )));
            }
            if layout == Layout::Dnn && column.is_categorical() {
                return Err(Error::Config(format!(
                    "feature column '{name}' is categorical: wrap it in indicator_column or \
                     embedding_column to feed a DNN"
                )));
            }
            if let FeatureColumn::Embedding(e) = column {
                if e.dimension == 0 {
                    return Err(Error::Config(format!(
                        "feature column '{name}': dimension must be at least 1"
                    )));
                }
            }
            column.resolve(&mut inputs, schema)?;
        }
        Ok(Self {
            layout,
            columns,
            inputs,
        })
    }

    /// The layout the columns were resolved for.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The feature columns, in the order given.
    pub fn columns(&self) -> &[FeatureColumn] {
        &self.columns
    }

    /// Values per example in the dense matrix.
    pub fn dense_width(&self) -> usize {
        self.columns.iter().map(|c| self.dense_width_of(c)).sum()
    }

    /// The embedding columns, in column order.
    pub fn embedding_columns(&self) -> Vec<&EmbeddingColumn> {
        self.columns
            .iter()
            .filter_map(|c| match c {
                FeatureColumn::Embedding(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// Number of ids of each sparse column (linear layout), in column order.
    pub fn sparse_bucket_counts(&self) -> Vec<usize> {
        self.columns
            .iter()
            .filter(|c| self.is_sparse(c))
            .filter_map(FeatureColumn::num_buckets)
            .collect()
    }

    /// Width of the input layer's output: dense values plus every embedding's dimension.
    pub fn input_width(&self) -> usize {
        self.dense_width()
            + self
                .embedding_columns()
                .iter()
                .map(|e| e.dimension)
                .sum::<usize>()
    }

    /// The input features read, with their serving type (numeric: `Float32`; category:
    /// `String`), in the order the columns first use them.
    pub fn serving_inputs(&self) -> Vec<(String, DType)> {
        self.inputs
            .keys()
            .map(|(key, source)| {
                let dtype = match source {
                    InputSource::Dense { .. } => DType::Float32,
                    InputSource::Categorical { .. } => DType::String,
                };
                (key.to_string(), dtype)
            })
            .collect()
    }

    /// Turns a batch into model inputs: the dense matrix, embedding ids, sparse ids.
    ///
    /// Errors name the column (an identity value out of range, an unknown value with no
    /// OOV bucket) or the example (a layout that is not the schema's).
    pub fn transform(&self, batch: &[Example]) -> Result<TransformedBatch> {
        for (i, example) in batch.iter().enumerate() {
            self.inputs.check_layout(i, example)?;
        }
        let width = self.dense_width();
        let mut dense = vec![0.0; batch.len() * width];
        let mut embedding_ids = Vec::new();
        let mut sparse_ids = Vec::new();
        let mut offset = 0;
        // Column by column, so that each column finds its inputs once per batch; runs of
        // numeric columns row by row, so that the writes are sequential (MNIST has 784).
        let mut next = 0;
        while next < self.columns.len() {
            let column = &self.columns[next];
            next += 1;
            match column {
                FeatureColumn::Numeric(first) => {
                    let mut readers = vec![first.reader(&self.inputs)?];
                    while let Some(FeatureColumn::Numeric(c)) = self.columns.get(next) {
                        readers.push(c.reader(&self.inputs)?);
                        next += 1;
                    }
                    for (i, example) in batch.iter().enumerate() {
                        let row = &mut dense[i * width + offset..][..readers.len()];
                        for (value, reader) in row.iter_mut().zip(&readers) {
                            *value = reader.read(example)?;
                        }
                    }
                    offset += readers.len();
                }
                FeatureColumn::Indicator(c) => {
                    for (i, example) in batch.iter().enumerate() {
                        let id = c.categorical.id(&self.inputs, example)?;
                        one_hot(&mut dense, i * width + offset, id, c.width(), column)?;
                    }
                    offset += c.width();
                }
                FeatureColumn::Embedding(c) => {
                    let ids = batch
                        .iter()
                        .map(|example| Ok(c.categorical.id(&self.inputs, example)? as i64))
                        .collect::<Result<Vec<i64>>>()?;
                    embedding_ids.push(ids);
                }
                FeatureColumn::Bucketized(c) if self.layout == Layout::Dnn => {
                    for (i, id) in c.ids(&self.inputs, batch)?.into_iter().enumerate() {
                        one_hot(&mut dense, i * width + offset, id, c.num_buckets(), column)?;
                    }
                    offset += c.num_buckets();
                }
                other => {
                    if let Some(ids) = other.ids(&self.inputs, batch) {
                        sparse_ids.push(ids?.into_iter().map(|id| id as i64).collect());
                    }
                }
            }
        }
        Ok(TransformedBatch {
            batch_size: batch.len(),
            dense_width: width,
            dense,
            embedding_ids,
            sparse_ids,
        })
    }

    fn is_sparse(&self, column: &FeatureColumn) -> bool {
        self.layout == Layout::Linear
            && (column.is_categorical() || matches!(column, FeatureColumn::Bucketized(_)))
    }

    fn dense_width_of(&self, column: &FeatureColumn) -> usize {
        match column {
            FeatureColumn::Numeric(_) => 1,
            FeatureColumn::Indicator(c) => c.width(),
            FeatureColumn::Bucketized(c) if self.layout == Layout::Dnn => c.num_buckets(),
            _ => 0,
        }
    }
}

/// Sets `dense[start + id]` to 1, checking that `id` is one of the column's `width` ids.
fn one_hot(
    dense: &mut [f32],
    start: usize,
    id: usize,
    width: usize,
    column: &FeatureColumn,
) -> Result<()> {
    match dense.get_mut(start + id).filter(|_| id < width) {
        Some(slot) => {
            *slot = 1.0;
            Ok(())
        }
        None => Err(Error::Config(format!(
            "feature column '{}': id {id} is not below its {width} buckets",
            column.name()
        ))),
    }
}

#[cfg(test)]
mod tests;
