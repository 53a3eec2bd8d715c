//! One feature of a compiled spec: where its values go in the batch, its default, and the
//! writing of a record's values (or the default) there.

use super::super::feature_values::FeatureValues;
use super::super::spec::DType;
use super::row_fault::RowFault;
use crate::{ColumnarBatch, Labels};

/// Where one feature's values go.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target {
    /// `values` dense values (a fixed float32 or int64 feature).
    Dense { values: usize },
    /// `values` categorical columns from `column` on (a fixed string feature).
    Categories { column: usize, values: usize },
    /// One categorical column holding the one value or `""` (a var-len feature).
    OneCategory { column: usize },
    /// The label column.
    Label,
}

/// A feature's values for an example that lacks it.
#[derive(Clone, Debug)]
pub(super) enum Fill {
    Dense(Vec<f32>),
    Strings(Vec<String>),
    Class(u32),
    Float(f32),
}

#[derive(Clone, Debug)]
pub(super) struct Compiled {
    pub(super) name: String,
    pub(super) dtype: DType,
    pub(super) shape: Vec<usize>,
    pub(super) target: Target,
    pub(super) default: Option<Fill>,
}

/// Index of the first NaN or infinity. The common case, none, is checked by a fold without
/// an early exit, which the compiler vectorises: a search that stops at the first one costs
/// more than decoding the values.
pub(super) fn first_non_finite(values: &[f32]) -> Option<usize> {
    if values.iter().fold(true, |all, v| all & v.is_finite()) {
        return None;
    }
    values.iter().position(|v| !v.is_finite())
}

/// A shape as TensorFlow prints it.
pub(super) fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(","))
}

impl Compiled {
    pub(super) fn message(&self, text: impl std::fmt::Display) -> RowFault {
        RowFault::Mismatch(format!("feature '{}' {text}", self.name))
    }

    pub(super) fn count_error(&self, found: usize, values: usize) -> RowFault {
        self.message(format!(
            "holds {found} values, its shape {} needs {values}",
            shape_text(&self.shape)
        ))
    }

    /// Writes the values of `lists` (of this feature's kind).
    pub(super) fn fill(
        &self,
        lists: &FeatureValues<'_>,
        batch: &mut ColumnarBatch,
        classes: Option<u32>,
    ) -> Result<(), RowFault> {
        match self.target {
            Target::Dense { values } => {
                let start = batch.dense.len();
                match self.dtype {
                    // Fixed-size chunks, so that the copy is vectorised (a run-time chunk
                    // size made it a loop of one value a time, a third of the decoding).
                    DType::Float32 => lists.floats::<RowFault>(|bytes| {
                        let (values, _) = bytes.as_chunks::<4>();
                        batch
                            .dense
                            .extend(values.iter().map(|b| f32::from_le_bytes(*b)))
                    })?,
                    _ => lists.ints::<RowFault>(|v| {
                        batch.dense.push(v as f32);
                        Ok(())
                    })?,
                }
                let written = &batch.dense[start..];
                if written.len() != values {
                    return Err(self.count_error(written.len(), values));
                }
                if let Some(i) = first_non_finite(written) {
                    return Err(self.message(format!(
                        "value {i} is {}: non-finite values are refused",
                        written[i]
                    )));
                }
                Ok(())
            }
            Target::Categories { column, values } => {
                let mut n = 0;
                lists.bytes::<RowFault>(|bytes| {
                    let text = self.utf8(n, bytes)?;
                    if let Some(out) = batch.categorical.get_mut(column + n).filter(|_| n < values)
                    {
                        out.push(text);
                    }
                    n += 1;
                    Ok(())
                })?;
                if n != values {
                    return Err(self.count_error(n, values));
                }
                Ok(())
            }
            Target::OneCategory { column } => {
                let mut n = 0;
                let out = &mut batch.categorical[column];
                let mut text = String::new();
                match self.dtype {
                    DType::String => lists.bytes::<RowFault>(|bytes| {
                        if n == 0 {
                            text.push_str(self.utf8(n, bytes)?);
                        }
                        n += 1;
                        Ok(())
                    })?,
                    _ => lists.ints::<RowFault>(|v| {
                        if n == 0 {
                            text = v.to_string();
                        }
                        n += 1;
                        Ok(())
                    })?,
                }
                if n > 1 {
                    return Err(self.message(format!(
                        "holds {n} values: a var_len feature is read as one category per row, \
                         so it may hold at most one"
                    )));
                }
                out.push(&text);
                Ok(())
            }
            Target::Label => {
                let mut n = 0;
                let labels = &mut batch.labels;
                match (self.dtype, labels) {
                    (DType::Int64, Labels::Class(out)) => lists.ints::<RowFault>(|v| {
                        n += 1;
                        if n == 1 {
                            out.push(self.class_id(v, classes)?);
                        }
                        Ok(())
                    })?,
                    (DType::Float32, Labels::Float(out)) => lists.floats::<RowFault>(|bytes| {
                        for b in bytes.as_chunks::<4>().0 {
                            n += 1;
                            if n == 1 {
                                out.push(f32::from_le_bytes(*b));
                            }
                        }
                    })?,
                    (DType::String, Labels::Name(out)) => lists.bytes::<RowFault>(|bytes| {
                        n += 1;
                        if n == 1 {
                            out.push(self.label_name(bytes)?);
                        }
                        Ok(())
                    })?,
                    _ => return Err(self.message("is a label of another kind than the batch's")),
                }
                if n != 1 {
                    return Err(self.count_error(n, 1));
                }
                if let Labels::Float(out) = &batch.labels {
                    if out.last().is_some_and(|v| !v.is_finite()) {
                        return Err(self.message(format!(
                            "value 0 is {}: non-finite values are refused",
                            out[out.len() - 1]
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes the default for an example that lacks the feature, or says it is missing.
    pub(super) fn fill_missing(&self, batch: &mut ColumnarBatch) -> Result<(), RowFault> {
        match (self.target, &self.default) {
            (Target::OneCategory { column }, _) => batch.categorical[column].push(""),
            (Target::Dense { .. }, Some(Fill::Dense(values))) => {
                batch.dense.extend_from_slice(values)
            }
            (Target::Categories { column, .. }, Some(Fill::Strings(values))) => {
                for (out, value) in batch.categorical[column..].iter_mut().zip(values) {
                    out.push(value);
                }
            }
            (Target::Label, Some(fill)) => match (fill, &mut batch.labels) {
                (Fill::Class(c), Labels::Class(out)) => out.push(*c),
                (Fill::Float(v), Labels::Float(out)) => out.push(*v),
                (Fill::Strings(s), Labels::Name(out)) => out.push(&s[0]),
                _ => return Err(self.message("has a default of another kind")),
            },
            _ => return Err(self.message("is missing and the spec gives it no default_value")),
        }
        Ok(())
    }

    pub(super) fn utf8<'b>(&self, index: usize, bytes: &'b [u8]) -> Result<&'b str, RowFault> {
        std::str::from_utf8(bytes).map_err(|e| {
            self.message(format!(
                "value {index} is not UTF-8 (byte {} of '{}')",
                e.valid_up_to(),
                crate::error::excerpt(bytes)
            ))
        })
    }

    pub(super) fn class_id(&self, v: i64, classes: Option<u32>) -> Result<u32, RowFault> {
        let Ok(id) = u32::try_from(v) else {
            return Err(self.message(format!(
                "holds class id {v}, not an integer in 0..=4294967295"
            )));
        };
        match classes {
            Some(n) if id >= n => {
                Err(self.message(format!("holds class id {id}, out of range for {n} classes")))
            }
            _ => Ok(id),
        }
    }

    pub(super) fn label_name<'b>(&self, bytes: &'b [u8]) -> Result<&'b str, RowFault> {
        let name = self.utf8(0, bytes)?;
        if name.trim().is_empty() {
            return Err(self.message("holds an empty class name"));
        }
        Ok(name)
    }
}
