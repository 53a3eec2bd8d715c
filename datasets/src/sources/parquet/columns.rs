//! Arrow columns of a Parquet row group written into a [`ColumnarBatch`], column by column:
//! numbers into the row-major dense block, text (plain or dictionary-encoded) into string
//! columns, the label into its column; nulls as CSV's empty cells (the column's default,
//! `""` for a category feature, else an error naming the row group, row and column).

use std::fmt::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType;

use crate::columnar::LabelKind;
use crate::sources::cell;
use crate::{ColumnarBatch, Labels};

/// Where a column's values go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// The next dense value: numeric features' values follow their columns' order.
    Dense,
    /// Category feature `n`.
    Categorical(usize),
    /// A regression target.
    LabelFloat,
    /// A class id, below the count when there is one.
    LabelClass(Option<u32>),
    /// A class name.
    LabelName,
}

impl Target {
    pub(crate) fn label_kind(self) -> Option<LabelKind> {
        match self {
            Target::LabelFloat => Some(LabelKind::Float),
            Target::LabelClass(_) => Some(LabelKind::Class),
            Target::LabelName => Some(LabelKind::Name),
            _ => None,
        }
    }
}

/// One schema column: where it is in the chunks read, where it goes, its default.
pub(crate) struct ColumnPlan {
    pub(crate) name: String,
    /// Index among the projected columns of a chunk.
    pub(crate) batch_index: usize,
    pub(crate) target: Target,
    /// The text a null stands for (checked against the column's type by the schema).
    pub(crate) default: Option<String>,
}

/// How the rows of a file are laid out in a batch.
pub(crate) struct Layout {
    pub(crate) columns: Vec<ColumnPlan>,
    /// The numeric features' plans, in the order of their dense values.
    pub(crate) dense_plans: Vec<usize>,
    pub(crate) dense: usize,
    pub(crate) categorical: usize,
    pub(crate) label: Option<LabelKind>,
}

/// Numeric columns written to the dense block together.
const TILE: usize = 16;

/// What is wrong with one value: its row in the chunk and the message.
type Bad = (usize, String);

/// What takes each row's text (`None` for a null).
type TextSink<'a> = dyn FnMut(usize, Option<&str>) -> Result<(), Bad> + 'a;

impl Layout {
    /// Empties `batch` and lays it out for these rows, keeping its buffers.
    pub(crate) fn begin(&self, batch: &mut ColumnarBatch) {
        batch.reset_layout(self.dense, self.categorical, self.label);
    }

    /// Appends rows `offset..offset + len` of `chunk` to `batch` (laid out by
    /// [`begin`](Self::begin)). On an error, the column and the row of `chunk` it is about,
    /// and what is wrong; `batch` is then unusable.
    pub(crate) fn append(
        &self,
        chunk: &RecordBatch,
        offset: usize,
        len: usize,
        batch: &mut ColumnarBatch,
    ) -> Result<(), (&str, Bad)> {
        let base = batch.rows;
        let width = self.dense;
        batch.dense.resize((base + len) * width, 0.0);
        let dense = &mut batch.dense[base * width..];
        // A tile of columns decoded into contiguous scratch, then written row by row: each
        // row's values of the tile share a cache line or two, where writing one column at
        // a time into the row-major block would touch a line per value.
        let mut scratch: Vec<f32> = Vec::new();
        let mut first = 0;
        for tile in self.dense_plans.chunks(TILE) {
            scratch.clear();
            scratch.resize(tile.len() * len, 0.0);
            for (column, &p) in scratch.chunks_exact_mut(len.max(1)).zip(tile) {
                let plan = &self.columns[p];
                let array = chunk.column(plan.batch_index);
                // float32 without nulls, the common case, is a copy; a value that is not
                // finite is then looked for again below, to name its row.
                let floats = array.as_primitive_opt::<Float32Type>();
                if let Some(floats) = floats.filter(|a| a.null_count() == 0) {
                    let values = &floats.values()[offset..offset + len];
                    column.copy_from_slice(values);
                    if values.iter().fold(true, |all, v| all & v.is_finite()) {
                        continue;
                    }
                }
                let array = array.slice(offset, len);
                let default = plan.default.as_deref().map(number_default);
                numbers(array.as_ref(), |i, value| {
                    let value = value.or(default).ok_or_else(|| no_default(i))?;
                    column[i] = finite(i, value)?;
                    Ok(())
                })
                .map_err(|(row, message)| (plan.name.as_str(), (row + offset, message)))?;
            }
            for r in 0..len {
                let row = &mut dense[r * width + first..r * width + first + tile.len()];
                for (t, value) in row.iter_mut().enumerate() {
                    *value = scratch[t * len + r];
                }
            }
            first += tile.len();
        }
        let mut text = String::new();
        for plan in (self.columns.iter()).filter(|p| !matches!(p.target, Target::Dense)) {
            let array = chunk.column(plan.batch_index).slice(offset, len);
            let array = array.as_ref();
            let at = |(row, message): Bad| (plan.name.as_str(), (row + offset, message));
            match plan.target {
                Target::Dense => {}
                Target::Categorical(out) => {
                    let column = &mut batch.categorical[out];
                    let default = plan.default.as_deref().unwrap_or("");
                    texts(array, &mut text, |_, value| {
                        column.push(value.unwrap_or(default));
                        Ok(())
                    })
                    .map_err(at)?;
                }
                Target::LabelFloat => {
                    let Labels::Float(labels) = &mut batch.labels else {
                        unreachable!("begin lays out a float label column")
                    };
                    let default = plan.default.as_deref().map(number_default);
                    numbers(array, |i, value| {
                        let value = value.or(default).ok_or_else(|| no_default(i))?;
                        labels.push(finite(i, value)?);
                        Ok(())
                    })
                    .map_err(at)?;
                }
                Target::LabelClass(classes) => {
                    let Labels::Class(labels) = &mut batch.labels else {
                        unreachable!("begin lays out a class id label column")
                    };
                    let default = (plan.default.as_deref())
                        .and_then(|d| cell::parse_class(d.as_bytes()))
                        .map(i128::from);
                    integers(array, |i, value| {
                        let value = value.or(default).ok_or_else(|| no_default(i))?;
                        let id = u32::try_from(value).map_err(|_| {
                            (i, format!("label {value} is not a class id (integer >= 0)"))
                        })?;
                        if let Some(n) = classes.filter(|&n| id >= n) {
                            return Err((i, format!("label {id} is out of range for {n} classes")));
                        }
                        labels.push(id);
                        Ok(())
                    })
                    .map_err(at)?;
                }
                Target::LabelName => {
                    let Labels::Name(labels) = &mut batch.labels else {
                        unreachable!("begin lays out a class name label column")
                    };
                    let default = plan.default.as_deref();
                    texts(array, &mut text, |i, value| {
                        labels.push(value.or(default).ok_or_else(|| no_default(i))?);
                        Ok(())
                    })
                    .map_err(at)?;
                }
            }
        }
        batch.rows += len;
        Ok(())
    }
}

/// A default's value as a number (the schema checked that it parses).
fn number_default(text: &str) -> f64 {
    cell::parse_f32(text.as_bytes()).map_or(0.0, f64::from)
}

fn no_default(row: usize) -> Bad {
    (row, "null value and no default".into())
}

/// `value` as a finite `f32`, as CSV cells must be.
fn finite(row: usize, value: f64) -> Result<f32, Bad> {
    let narrowed = value as f32;
    if narrowed.is_finite() {
        Ok(narrowed)
    } else {
        Err((row, format!("{value:e} is not a finite 32-bit float")))
    }
}

/// Calls `f` with each row's number (`None` for a null) of a numeric or boolean column.
fn numbers(
    array: &dyn Array,
    mut f: impl FnMut(usize, Option<f64>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    macro_rules! each {
        ($t:ty, $convert:expr) => {
            primitive::<$t>(array, |i, v| f(i, v.map($convert)))
        };
    }
    match array.data_type() {
        DataType::Float16 => each!(Float16Type, |v| f64::from(v.to_f32())),
        DataType::Float32 => each!(Float32Type, f64::from),
        DataType::Float64 => each!(Float64Type, |v| v),
        DataType::Boolean => booleans(array, |i, v| f(i, v.map(|b| f64::from(u8::from(b))))),
        _ => integers(array, |i, v| f(i, v.map(|v| v as f64))),
    }
}

/// Calls `f` with each row's integer (`None` for a null) of an integer or boolean column.
fn integers(
    array: &dyn Array,
    mut f: impl FnMut(usize, Option<i128>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    macro_rules! each {
        ($t:ty) => {
            primitive::<$t>(array, |i, v| f(i, v.map(i128::from)))
        };
    }
    match array.data_type() {
        DataType::Int8 => each!(Int8Type),
        DataType::Int16 => each!(Int16Type),
        DataType::Int32 => each!(Int32Type),
        DataType::Int64 => each!(Int64Type),
        DataType::UInt8 => each!(UInt8Type),
        DataType::UInt16 => each!(UInt16Type),
        DataType::UInt32 => each!(UInt32Type),
        DataType::UInt64 => each!(UInt64Type),
        DataType::Boolean => booleans(array, |i, v| f(i, v.map(|b| i128::from(u8::from(b))))),
        other => Err((0, format!("holds {other} values, not integers"))),
    }
}

/// Calls `f` with each row's text (`None` for a null) of a text column, plain or
/// dictionary-encoded, or of an integer column written in decimal.
fn texts(
    array: &dyn Array,
    buffer: &mut String,
    mut f: impl FnMut(usize, Option<&str>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    let Some(dictionary) = array.as_any_dictionary_opt() else {
        return plain_texts(array, buffer, &mut f);
    };
    // Each distinct value once, then the rows by key.
    let mut entries: Vec<Option<String>> = Vec::with_capacity(dictionary.values().len());
    plain_texts(dictionary.values().as_ref(), buffer, &mut |_, value| {
        entries.push(value.map(str::to_owned));
        Ok(())
    })?;
    dictionary_keys(dictionary.keys(), |i, key| {
        let value = match key {
            None => None,
            Some(k) => match entries.get(k) {
                Some(entry) => entry.as_deref(),
                None => {
                    let n = entries.len();
                    return Err((i, format!("dictionary key {k} is past its {n} values")));
                }
            },
        };
        f(i, value)
    })
}

/// [`texts`] of a column that is not dictionary-encoded.
fn plain_texts(array: &dyn Array, buffer: &mut String, f: &mut TextSink<'_>) -> Result<(), Bad> {
    if let Some(strings) = array.as_string_opt::<i32>() {
        return (0..array.len()).try_for_each(|i| f(i, valid(array, i).then(|| strings.value(i))));
    }
    if let Some(strings) = array.as_string_opt::<i64>() {
        return (0..array.len()).try_for_each(|i| f(i, valid(array, i).then(|| strings.value(i))));
    }
    if let Some(strings) = array.as_string_view_opt() {
        return (0..array.len()).try_for_each(|i| f(i, valid(array, i).then(|| strings.value(i))));
    }
    integers(array, |i, value| match value {
        None => f(i, None),
        Some(v) => {
            buffer.clear();
            let _ = write!(buffer, "{v}");
            f(i, Some(buffer))
        }
    })
}

/// Calls `f` with each row's key (`None` for a null) of a dictionary's keys.
fn dictionary_keys(
    keys: &dyn Array,
    mut f: impl FnMut(usize, Option<usize>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    fn each<K: ArrowDictionaryKeyType>(
        keys: &dyn Array,
        f: &mut impl FnMut(usize, Option<usize>) -> Result<(), Bad>,
    ) -> Result<(), Bad> {
        primitive::<K>(keys, |i, k| f(i, k.map(|k| k.as_usize())))
    }
    match keys.data_type() {
        DataType::Int8 => each::<Int8Type>(keys, &mut f),
        DataType::Int16 => each::<Int16Type>(keys, &mut f),
        DataType::Int32 => each::<Int32Type>(keys, &mut f),
        DataType::Int64 => each::<Int64Type>(keys, &mut f),
        DataType::UInt8 => each::<UInt8Type>(keys, &mut f),
        DataType::UInt16 => each::<UInt16Type>(keys, &mut f),
        DataType::UInt32 => each::<UInt32Type>(keys, &mut f),
        DataType::UInt64 => each::<UInt64Type>(keys, &mut f),
        other => Err((0, format!("dictionary keys of type {other}"))),
    }
}

fn valid(array: &dyn Array, i: usize) -> bool {
    array.nulls().is_none_or(|nulls| nulls.is_valid(i))
}

/// Calls `f` with each value of a primitive array of type `T` (`None` for a null).
fn primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    mut f: impl FnMut(usize, Option<T::Native>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    let Some(values) = array.as_primitive_opt::<T>() else {
        return Err((0, format!("holds {} values", array.data_type())));
    };
    match values.nulls() {
        None => (values.values().iter().enumerate()).try_for_each(|(i, &v)| f(i, Some(v))),
        Some(nulls) => (values.values().iter().enumerate())
            .try_for_each(|(i, &v)| f(i, nulls.is_valid(i).then_some(v))),
    }
}

fn booleans(
    array: &dyn Array,
    mut f: impl FnMut(usize, Option<bool>) -> Result<(), Bad>,
) -> Result<(), Bad> {
    let Some(values) = array.as_boolean_opt() else {
        return Err((0, format!("holds {} values", array.data_type())));
    };
    (0..values.len()).try_for_each(|i| f(i, valid(array, i).then(|| values.value(i))))
}
