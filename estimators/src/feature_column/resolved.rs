//! [`ResolvedColumns`]: feature columns checked against a schema, ready to transform
//! batches.

use datasets::{ColumnarBatch, Schema};
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::bucketized::BucketizedColumn;
use super::column::FeatureColumn;
use super::embedding::EmbeddingColumn;
use super::numeric::Normalizer;
use super::source::InputSources;

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
/// checked, so that turning a batch into model inputs only reads. Serialisable, so an export
/// carries everything (vocabularies, normalisers, positions) that serving needs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(try_from = "Saved")]
pub struct ResolvedColumns {
    layout: Layout,
    columns: Vec<FeatureColumn>,
    inputs: InputSources,
    /// What each column becomes, worked out once (it looks every key up by name).
    #[serde(skip)]
    parts: Vec<ColumnInput>,
}

/// The saved form, whose parts are worked out again when it is read.
#[derive(Deserialize)]
struct Saved {
    layout: Layout,
    columns: Vec<FeatureColumn>,
    inputs: InputSources,
}

impl TryFrom<Saved> for ResolvedColumns {
    type Error = Error;

    fn try_from(saved: Saved) -> Result<Self> {
        // A hand-edited or damaged saved form gets every check a new one gets: a hash size of
        // 0 would divide by zero, a place outside the batch panic, a repeated vocabulary
        // entry or unsorted boundaries silently give other ids.
        let schema = saved.inputs.saved_schema()?;
        let again = Self::resolve(saved.columns.clone(), &schema, saved.layout)?;
        if !again.inputs.same_keys(&saved.inputs) {
            return Err(Error::Config(
                "the saved inputs are not those the saved feature columns read".into(),
            ));
        }
        let parts = parts(&saved.columns, &saved.inputs, saved.layout)?;
        Ok(Self {
            layout: saved.layout,
            columns: saved.columns,
            inputs: saved.inputs,
            parts,
        })
    }
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
                e.check()?;
            }
            column.resolve(&mut inputs, schema)?;
        }
        check_sizes(&columns, layout)?;
        embedding_tables::check_shared_tables(&columns)?;
        serving_inputs::check_shaped_names(&columns, &inputs)?;
        Ok(Self {
            parts: parts(&columns, &inputs, layout)?,
            layout,
            columns,
            inputs,
        })
    }

    /// Checks that the columns read `schema` where they were resolved to read it (a saved
    /// estimator's columns and its saved schema), not another column of it.
    pub(crate) fn check_schema(&self, schema: &Schema) -> Result<()> {
        let again = Self::resolve(self.columns.clone(), schema, self.layout)?;
        if again.inputs != self.inputs {
            return Err(Error::Config(
                "the saved feature columns do not read the saved schema where they were \
                 resolved to"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The layout the columns were resolved for.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The feature columns, in the order given.
    pub fn columns(&self) -> &[FeatureColumn] {
        &self.columns
    }

    /// The column named `name` (TF's naming: `price`, `site_embedding`, `a_X_b_indicator`).
    pub fn column(&self, name: &str) -> Option<&FeatureColumn> {
        self.columns.iter().find(|c| c.name() == name)
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

    /// Width of the input layer's output: dense values plus every embedding's dimension.
    pub fn input_width(&self) -> usize {
        self.dense_width()
            + self
                .embedding_columns()
                .iter()
                .map(|e| e.dimension)
                .sum::<usize>()
    }

    /// Checks that `batch` is laid out as the schema the columns were resolved against.
    pub(crate) fn check_layout(&self, batch: &ColumnarBatch) -> Result<()> {
        self.inputs.check_layout(batch)
    }

    /// How each column becomes model input, in column order; runs of numeric columns are
    /// one part, so that they are read from the batch together.
    pub(crate) fn parts(&self) -> &[ColumnInput] {
        &self.parts
    }

    /// The ids of every row of `batch` for a categorical, indicator or embedding column,
    /// row after row ([`ids_per_example`](Self::ids_per_example) each): vocabulary and hash
    /// lookups, identity checks and crosses, the work that needs the host.
    ///
    /// Errors name the column (an identity value out of range, an unknown value with no
    /// OOV bucket).
    pub(crate) fn ids(&self, column: usize, batch: &ColumnarBatch) -> Result<Vec<i64>> {
        let column = &self.columns[column];
        let categorical = match column {
            FeatureColumn::Indicator(c) => &c.categorical,
            FeatureColumn::Embedding(c) => &c.categorical,
            other => {
                return match other.ids(&self.inputs, batch) {
                    Some(ids) => Ok(ids?.into_iter().map(|id| id as i64).collect()),
                    None => Err(Error::Config(format!(
                        "feature column '{}' has no ids",
                        other.name()
                    ))),
                }
            }
        };
        let width = categorical.num_buckets();
        let mut ids = Vec::with_capacity(batch.rows * categorical.ids_per_example());
        for row in batch.rows() {
            for id in categorical.ids(&self.inputs, &row)? {
                if id >= width {
                    return Err(Error::Config(format!(
                        "feature column '{}': id {id} is not below its {width} buckets",
                        column.name()
                    )));
                }
                ids.push(id as i64);
            }
        }
        Ok(ids)
    }

    /// How many ids [`ids`](Self::ids) gives each row for `column`: more than one for a
    /// cross of a shaped bucketized column.
    pub(crate) fn ids_per_example(&self, column: usize) -> usize {
        match &self.columns[column] {
            FeatureColumn::Indicator(c) => c.categorical.ids_per_example(),
            FeatureColumn::Embedding(c) => c.categorical.ids_per_example(),
            FeatureColumn::Crossed(c) => c.ids_per_example(),
            _ => 1,
        }
    }

    pub(crate) fn is_sparse(&self, column: &FeatureColumn) -> bool {
        self.layout == Layout::Linear
            && (column.is_categorical() || matches!(column, FeatureColumn::Bucketized(_)))
    }

    fn dense_width_of(&self, column: &FeatureColumn) -> usize {
        match column {
            FeatureColumn::Numeric(c) => c.width(),
            FeatureColumn::Indicator(c) => c.width(),
            // Each value's one-hot: as many values as the column has ids.
            FeatureColumn::Bucketized(_) if self.layout == Layout::Dnn => {
                column.num_buckets().unwrap_or(0)
            }
            _ => 0,
        }
    }
}

/// Checks that the input width and the ids of all columns fit the device's i64 ids and
/// offsets, so that summing them (`input_width`, a linear model's table) cannot overflow.
fn check_sizes(columns: &[FeatureColumn], layout: Layout) -> Result<()> {
    let (mut width, mut ids) = (Some(0usize), Some(0usize));
    for column in columns {
        let (w, n) = match column {
            FeatureColumn::Numeric(c) => (c.width(), 0),
            FeatureColumn::Indicator(c) => (c.width(), 0),
            FeatureColumn::Embedding(e) => (e.dimension, e.num_buckets()),
            FeatureColumn::Bucketized(_) if layout == Layout::Dnn => {
                (column.num_buckets().unwrap_or(0), 0)
            }
            other => (0, other.num_buckets().unwrap_or(0)),
        };
        width = width.and_then(|t| t.checked_add(w));
        ids = ids.and_then(|t| t.checked_add(n));
    }
    let most = i64::MAX as usize;
    match (width, ids) {
        (Some(w), Some(n)) if w <= most && n <= most => Ok(()),
        _ => Err(Error::Config(format!(
            "the feature columns' widths or bucket counts add up to more than {most}"
        ))),
    }
}

/// What each of `columns` becomes for `layout`, runs of numeric columns as one part.
fn parts(
    columns: &[FeatureColumn],
    inputs: &InputSources,
    layout: Layout,
) -> Result<Vec<ColumnInput>> {
    let mut parts = Vec::with_capacity(columns.len());
    for (column, feature_column) in columns.iter().enumerate() {
        let part = match feature_column {
            FeatureColumn::Numeric(c) => {
                let mut values = Vec::with_capacity(c.width());
                for key in c.keys() {
                    values.push((inputs.dense_index(&key)?, c.normalizer));
                }
                if let Some(ColumnInput::Numeric(run)) = parts.last_mut() {
                    run.extend(values);
                    continue;
                }
                ColumnInput::Numeric(values)
            }
            FeatureColumn::Bucketized(c) => {
                let role = match layout {
                    Layout::Linear => IdRole::Sparse,
                    Layout::Dnn => IdRole::OneHot(c.num_buckets()),
                };
                bucketized(c, inputs, role)?
            }
            FeatureColumn::Indicator(c) => match c.categorical.bucketized() {
                Some(b) => bucketized(b, inputs, IdRole::OneHot(b.num_buckets()))?,
                None => ColumnInput::Ids {
                    column,
                    role: IdRole::OneHot(c.width()),
                },
            },
            FeatureColumn::Embedding(c) => match c.categorical.bucketized() {
                Some(b) => bucketized(b, inputs, IdRole::Embedding)?,
                None => ColumnInput::Ids {
                    column,
                    role: IdRole::Embedding,
                },
            },
            _ => ColumnInput::Ids {
                column,
                role: IdRole::Sparse,
            },
        };
        parts.push(part);
    }
    Ok(parts)
}

/// A bucketized column's values, cut on the device, each value's bucket in `role`.
fn bucketized(c: &BucketizedColumn, inputs: &InputSources, role: IdRole) -> Result<ColumnInput> {
    Ok(ColumnInput::Bucketized {
        indices: (c.source.keys().iter())
            .map(|key| inputs.dense_index(key))
            .collect::<Result<_>>()?,
        normalizer: c.source.normalizer,
        boundaries: c.boundaries.clone(),
        role,
    })
}

/// How one column (or a run of numeric ones) becomes model input.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ColumnInput {
    /// Numeric values: each one's position in the batch's dense values and its normaliser.
    Numeric(Vec<(usize, Option<Normalizer>)>),
    /// Numeric values (normalised first, as TF), each cut at `boundaries`: a one-hot each in
    /// the dense part, side by side; a sparse id each in the linear layout; or an embedding
    /// column's ids, value `i`'s bucket `b` its row `i × buckets + b`. `indices`: their
    /// positions in the batch's dense values.
    Bucketized {
        indices: Vec<usize>,
        normalizer: Option<Normalizer>,
        boundaries: Vec<f32>,
        role: IdRole,
    },
    /// Column number `column`, whose ids the host computes ([`ResolvedColumns::ids`]).
    Ids { column: usize, role: IdRole },
}

/// What a column's ids become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdRole {
    /// A one-hot vector of this width in the dense part (indicator columns; each value's, of
    /// a bucketized column).
    OneHot(usize),
    /// Rows of the column's embedding table.
    Embedding,
    /// A sparse id of the linear layout.
    Sparse,
}

mod embedding_tables;
mod input_names;
mod serving_inputs;
mod sparse_slots;

#[cfg(test)]
mod tests;
