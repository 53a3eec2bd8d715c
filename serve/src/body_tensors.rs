//! A REST body read straight into input tensors, with no JSON value per element between:
//! the common forms of `:predict`'s `instances` and `inputs` and of `:classify` /
//! `:regress`'s `examples`: every input once per row, nested as its shape, of its type.
//!
//! A scalar input's value may be a one-element list (TF's `[batch, 1]` inputs), as the JSON
//! reading takes it too. Anything else is declined and read as JSON values instead, whose
//! checks and errors stay the only ones: binary values (`{"b64": …}`), a number for a
//! string input, an unknown, missing or repeated input or member, a `context`, a number
//! beyond float32 or int64, no rows at all. So what is read here is a request the
//! JSON reading accepts too, with the same values: a float32 is the number's `f64` rounded
//! to `f32`, as [`float_input`](estimator::export::float_input) reads it.

mod values;

use estimator::export::{DType, InputTensors, TensorElements};
use estimator::Signature;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::request::Format;
use values::{Column, InputName, Names, Nested};

/// Which member a method reads its rows from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowsIn {
    /// `:predict`: `instances` (row format) or `inputs` (columnar).
    InstancesOrInputs,
    /// `:classify` / `:regress`: `examples`, each an object of features.
    Examples,
}

/// A body read into tensors.
#[derive(Debug)]
pub(crate) struct BodyTensors {
    /// The `signature_name` it gives ("" when none).
    pub(crate) signature_name: String,
    /// How it was written (`examples` are rows).
    pub(crate) format: Format,
    /// Its rows, one tensor per input of the signature.
    pub(crate) inputs: InputTensors,
}

/// `body` as tensors of `signature`'s inputs, when it is in a common form (above); `None`
/// otherwise.
pub(crate) fn body_tensors(
    body: &[u8],
    signature: &Signature,
    rows_in: RowsIn,
) -> Option<BodyTensors> {
    let mut columns: Vec<Column> = (signature.inputs.iter())
        .map(|input| Column {
            shape: &input.shape,
            elements: match input.dtype {
                DType::Float32 => TensorElements::Float32(Vec::new()),
                DType::Int64 => TensorElements::Int64(Vec::new()),
                DType::String => TensorElements::String(Vec::new()),
            },
        })
        .collect();
    let names = Names::new(signature);
    let mut json = serde_json::Deserializer::from_slice(body);
    let (signature_name, format, rows) = Body {
        table: Table {
            columns: &mut columns,
            names: &names,
        },
        rows_in,
    }
    .deserialize(&mut json)
    .ok()?;
    json.end().ok()?;
    let elements = columns.into_iter().map(|c| c.elements).collect();
    let inputs = InputTensors::new(signature, rows, elements)?;
    Some(BodyTensors {
        signature_name,
        format,
        inputs,
    })
}

/// Why a body is declined; never shown, as the JSON reading then says what is wrong.
fn declined<E: serde::de::Error>() -> E {
    E::custom("not in a form read into tensors")
}

/// The columns being filled and how their inputs are named.
struct Table<'t, 's> {
    columns: &'t mut [Column<'s>],
    names: &'t Names<'s>,
}

impl<'s> Table<'_, 's> {
    fn reborrow(&mut self) -> Table<'_, 's> {
        Table {
            columns: self.columns,
            names: self.names,
        }
    }

    /// A seed reading one value of input `index` into its column.
    fn value(&mut self, index: usize) -> Nested<'_> {
        let column = &mut self.columns[index];
        Nested {
            shape: column.shape,
            elements: &mut column.elements,
            whole: true,
        }
    }
}

/// A member of the body, by name.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Member {
    SignatureName,
    Instances,
    Inputs,
    Examples,
    Context,
    #[serde(other)]
    Other,
}

/// The whole body: its signature name, its format and its number of rows.
struct Body<'t, 's> {
    table: Table<'t, 's>,
    rows_in: RowsIn,
}

impl<'de> DeserializeSeed<'de> for Body<'_, '_> {
    type Value = (String, Format, usize);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Body<'_, '_> {
    type Value = (String, Format, usize);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a request body")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut members: A) -> Result<Self::Value, A::Error> {
        let mut signature_name: Option<String> = None;
        let mut rows: Option<(Format, usize)> = None;
        let predict = self.rows_in == RowsIn::InstancesOrInputs;
        while let Some(member) = members.next_key::<Member>()? {
            let format = match member {
                Member::SignatureName if signature_name.is_none() => {
                    signature_name = Some(members.next_value()?);
                    continue;
                }
                Member::SignatureName => return Err(declined()),
                Member::Instances if predict => Format::Row,
                Member::Inputs if predict => Format::Columnar,
                Member::Examples if !predict => Format::Row,
                Member::Context if !predict => return Err(declined()),
                _ => {
                    members.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if rows.is_some() {
                return Err(declined());
            }
            let table = self.table.reborrow();
            let count = match format {
                Format::Row => members.next_value_seed(RowList {
                    table,
                    named_only: !predict,
                })?,
                Format::Columnar => members.next_value_seed(ColumnSet { table })?,
            };
            rows = Some((format, count));
        }
        match rows {
            Some((format, count)) if count > 0 => {
                Ok((signature_name.unwrap_or_default(), format, count))
            }
            _ => Err(declined()),
        }
    }
}

/// A list of rows; its value is how many. With `named_only`, each row is an object of
/// inputs (an example); else also a list of every input's value in the signature's order,
/// or, with one input, its value.
struct RowList<'t, 's> {
    table: Table<'t, 's>,
    named_only: bool,
}

impl<'de> DeserializeSeed<'de> for RowList<'_, '_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowList<'_, '_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut rows: A) -> Result<usize, A::Error> {
        let mut seen = vec![false; self.table.columns.len()];
        let mut count = 0;
        loop {
            let row = Row {
                table: self.table.reborrow(),
                named_only: self.named_only,
                seen: &mut seen,
            };
            if rows.next_element_seed(row)?.is_none() {
                return Ok(count);
            }
            count += 1;
        }
    }
}

/// One row of a [`RowList`].
struct Row<'t, 's> {
    table: Table<'t, 's>,
    named_only: bool,
    /// Which inputs a named row has given, reused from row to row.
    seen: &'t mut Vec<bool>,
}

impl<'de> DeserializeSeed<'de> for Row<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Row<'_, '_> {
    /// The value of a row that is the one input's value, when the row can be.
    fn only_input<E: serde::de::Error>(&mut self) -> Result<Nested<'_>, E> {
        match self.table.columns.len() {
            1 if !self.named_only => Ok(self.table.value(0)),
            _ => Err(declined()),
        }
    }
}

impl<'de> Visitor<'de> for Row<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a row")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut members: A) -> Result<(), A::Error> {
        self.seen.iter_mut().for_each(|seen| *seen = false);
        while let Some(index) = members.next_key_seed(InputName(self.table.names))? {
            if std::mem::replace(&mut self.seen[index], true) {
                return Err(declined());
            }
            members.next_value_seed(self.table.value(index))?;
        }
        match self.seen.iter().all(|&seen| seen) {
            true => Ok(()),
            false => Err(declined()),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut values: A) -> Result<(), A::Error> {
        if self.table.columns.len() == 1 {
            return self.only_input()?.visit_seq(values);
        }
        if self.named_only {
            return Err(declined());
        }
        for index in 0..self.table.columns.len() {
            if values.next_element_seed(self.table.value(index))?.is_none() {
                return Err(declined());
            }
        }
        match values.next_element::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(declined()),
        }
    }

    fn visit_f64<E: serde::de::Error>(mut self, x: f64) -> Result<(), E> {
        self.only_input()?.visit_f64(x)
    }

    fn visit_i64<E: serde::de::Error>(mut self, x: i64) -> Result<(), E> {
        self.only_input()?.visit_i64(x)
    }

    fn visit_u64<E: serde::de::Error>(mut self, x: u64) -> Result<(), E> {
        self.only_input()?.visit_u64(x)
    }

    fn visit_str<E: serde::de::Error>(mut self, text: &str) -> Result<(), E> {
        self.only_input()?.visit_str(text)
    }
}

/// The columnar `inputs`: an object of input name → one value per row (or, with one
/// input, that list itself); its value is the number of rows, the same for every input.
struct ColumnSet<'t, 's> {
    table: Table<'t, 's>,
}

impl<'de> DeserializeSeed<'de> for ColumnSet<'_, '_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ColumnSet<'_, '_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("columns")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut members: A) -> Result<usize, A::Error> {
        let mut seen = vec![false; self.table.columns.len()];
        let mut rows: Option<usize> = None;
        while let Some(index) = members.next_key_seed(InputName(self.table.names))? {
            if std::mem::replace(&mut seen[index], true) {
                return Err(declined());
            }
            let count = members.next_value_seed(ColumnList(self.table.value(index)))?;
            if rows.is_some_and(|rows| rows != count) {
                return Err(declined());
            }
            rows = Some(count);
        }
        match (seen.iter().all(|&seen| seen), rows) {
            (true, Some(rows)) => Ok(rows),
            _ => Err(declined()),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, values: A) -> Result<usize, A::Error> {
        match self.table.columns.len() {
            1 => ColumnList(self.table.value(0)).visit_seq(values),
            _ => Err(declined()),
        }
    }
}

/// One input's list of values, one per row; its value is how many.
struct ColumnList<'c>(Nested<'c>);

impl<'de> DeserializeSeed<'de> for ColumnList<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ColumnList<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of values")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut values: A) -> Result<usize, A::Error> {
        let mut count = 0;
        while values.next_element_seed(self.0.reborrow())?.is_some() {
            count += 1;
        }
        Ok(count)
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
