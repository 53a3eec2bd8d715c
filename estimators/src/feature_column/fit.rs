//! [`fit_columns`]: one pass over the training input that learns what feature columns
//! leave to the data — normalisation statistics and vocabularies — as the analysis step of
//! tf.Transform (or Keras' `adapt`) does before a model is built.

use std::collections::HashMap;

use datasets::{
    ColumnarBatch, ColumnarRow, Dataset, Example, FeatureStats, Schema, StatsAccumulator,
};
use estimator::{Error, Result};

use super::column::FeatureColumn;
use super::learned::{for_each_learned, Learned};
use super::resolved::{Layout, ResolvedColumns};
use super::source::{Accept, InputSource, InputSources, Raw};

/// What [`fit_columns`] reads the rows of: a columnar batch (the canned estimators'
/// pipelines), one example or a batch of examples.
pub trait FitInput {
    /// Calls `row` with each row, in order, until it fails.
    fn for_each_row(&self, row: &mut dyn FnMut(&dyn ColumnarRow) -> Result<()>) -> Result<()>;
}

impl FitInput for ColumnarBatch {
    fn for_each_row(&self, row: &mut dyn FnMut(&dyn ColumnarRow) -> Result<()>) -> Result<()> {
        self.rows().try_for_each(|r| row(&r))
    }
}

impl FitInput for Example {
    fn for_each_row(&self, row: &mut dyn FnMut(&dyn ColumnarRow) -> Result<()>) -> Result<()> {
        row(self)
    }
}

impl FitInput for Vec<Example> {
    fn for_each_row(&self, row: &mut dyn FnMut(&dyn ColumnarRow) -> Result<()>) -> Result<()> {
        self.iter().try_for_each(|e| row(e))
    }
}

/// `columns` with everything they learn from the training input filled in: the normaliser
/// of every [`with_learned_normalizer`](super::NumericColumn::with_learned_normalizer)
/// column (mean and population standard deviation) and the vocabulary of every
/// [`categorical_column_with_learned_vocabulary`](super::categorical_column_with_learned_vocabulary),
/// nested ones included. The result is plain columns, as if written by hand: pass them to
/// a canned estimator or to [`ResolvedColumns::resolve`].
///
/// `data` is read once, to its end (give it one epoch, not a repeated pipeline), and not at
/// all when nothing is to be learned. Errors name the column or the key: one that is not a
/// feature of `schema`, a row of another layout, no rows, an empty learned vocabulary.
pub fn fit_columns<D>(
    columns: impl IntoIterator<Item = FeatureColumn>,
    schema: &Schema,
    mut data: D,
) -> Result<Vec<FeatureColumn>>
where
    D: Dataset,
    D::Item: FitInput,
{
    let mut columns: Vec<FeatureColumn> = columns.into_iter().collect();
    let wanted = wanted_keys(&mut columns);
    if wanted.is_empty() {
        return Ok(columns);
    }
    let mut inputs = InputSources::new(schema);
    let (mut numeric, mut vocabulary) = (Vec::new(), Vec::new());
    for (key, user, accept) in &wanted {
        inputs.add(schema, key, user, *accept)?;
        let keys = match accept {
            Accept::Numeric => &mut numeric,
            Accept::Categorical => &mut vocabulary,
        };
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    let learned = read(&inputs, (&numeric, &vocabulary), &mut data)?;
    let mut filled = Ok(());
    for column in &mut columns {
        for_each_learned(column, &mut |part| {
            let result = match part {
                Learned::Normalizer(c) => {
                    let place = |key: &String| numeric.iter().position(|k| k == key);
                    let places: Vec<usize> = c.keys().iter().filter_map(place).collect();
                    let (mean, std) = pooled(&learned.stats, &places);
                    *c = c.clone().with_normalizer(mean, std);
                    Ok(())
                }
                Learned::Vocabulary(c) => {
                    let i = vocabulary
                        .iter()
                        .position(|k| *k == c.key)
                        .unwrap_or_default();
                    c.set_learned(&learned.counts[i])
                }
            };
            if filled.is_ok() {
                filled = result;
            }
        });
    }
    filled.map(|()| columns)
}

impl ResolvedColumns {
    /// [`fit_columns`] then [`ResolvedColumns::resolve`]: the columns of a model learned from
    /// its training input and checked against `schema`, ready to be kept in an estimator's
    /// (serialised) configuration.
    pub fn fit<D>(
        columns: impl IntoIterator<Item = FeatureColumn>,
        schema: &Schema,
        layout: Layout,
        data: D,
    ) -> Result<Self>
    where
        D: Dataset,
        D::Item: FitInput,
    {
        Self::resolve(fit_columns(columns, schema, data)?, schema, layout)
    }
}

/// Every input key something is learned from: `(key, column name, what it reads)`.
fn wanted_keys(columns: &mut [FeatureColumn]) -> Vec<(String, String, Accept)> {
    let mut wanted = Vec::new();
    for column in columns {
        let user = column.name();
        for_each_learned(column, &mut |part| {
            wanted.push(match part {
                Learned::Normalizer(c) => {
                    let keys = c.keys().into_iter();
                    wanted.extend(keys.map(|key| (key, user.clone(), Accept::Numeric)));
                    return;
                }
                Learned::Vocabulary(c) => (c.key.clone(), user.clone(), Accept::Categorical),
            })
        });
    }
    wanted
}

/// The mean and population standard deviation of the values of the numeric keys at
/// `places` together (as many of each): a shaped column's one normaliser.
fn pooled(stats: &FeatureStats, places: &[usize]) -> (f32, f32) {
    let n = places.len().max(1) as f64;
    let mean = places
        .iter()
        .map(|&i| f64::from(stats.mean[i]))
        .sum::<f64>()
        / n;
    let variance = (places.iter())
        .map(|&i| {
            let (m, s) = (f64::from(stats.mean[i]), f64::from(stats.std[i]));
            s * s + (m - mean) * (m - mean)
        })
        .sum::<f64>()
        / n;
    (mean as f32, variance.sqrt() as f32)
}

/// What the pass learned: statistics of the numeric keys and value counts of the
/// categorical ones, each in the order of its key list.
struct Fitted {
    stats: FeatureStats,
    counts: Vec<HashMap<String, u64>>,
}

/// Reads `data` to its end, learning the statistics of the `numeric` keys and the value
/// counts of the `categorical` ones.
fn read<D>(
    inputs: &InputSources,
    (numeric, categorical): (&[String], &[String]),
    data: &mut D,
) -> Result<Fitted>
where
    D: Dataset,
    D::Item: FitInput,
{
    let dense_index = |key: &String| inputs.dense_index(key);
    let numeric: Vec<usize> = numeric.iter().map(dense_index).collect::<Result<_>>()?;
    let categorical: Vec<InputSource> = categorical
        .iter()
        .map(|key| inputs.source(key).expect("every key was added"))
        .collect();
    let mut stats = StatsAccumulator::new();
    let mut counts = vec![HashMap::<String, u64>::new(); categorical.len()];
    let mut values = vec![0.0f32; numeric.len()];
    let mut rows = 0u64;
    let mut add = |row: &dyn ColumnarRow| -> Result<()> {
        inputs.check_row(row)?;
        for (value, &index) in values.iter_mut().zip(&numeric) {
            *value = row.dense()[index];
        }
        if !numeric.is_empty() {
            stats.add(&values)?;
        }
        for (seen, source) in counts.iter_mut().zip(&categorical) {
            let raw = match *source {
                InputSource::Dense { index, .. } => Raw::Number(row.dense()[index]),
                InputSource::Categorical { index } => Raw::Text(row.categorical(index)),
            };
            let token = raw.token();
            match seen.get_mut(token.as_ref()) {
                Some(n) => *n += 1,
                None => {
                    seen.insert(token.into_owned(), 1);
                }
            }
        }
        rows += 1;
        Ok(())
    };
    while let Some(item) = data.next_item() {
        item?.for_each_row(&mut add)?;
    }
    if rows == 0 {
        return Err(Error::Config(
            "fit_columns: the training input has no rows to learn normalizers or vocabularies \
             from"
                .into(),
        ));
    }
    Ok(Fitted {
        stats: stats.finish(),
        counts,
    })
}

#[cfg(test)]
mod tests;
