//! [`ExampleParser`]: a [`FeatureSpec`] compiled to decode tf.Examples straight into the
//! columns of a [`ColumnarBatch`], one row per record.
//!
//! Protobuf semantics as TensorFlow's parser has them: fields may come in any order and
//! unknown ones are skipped; a feature named twice takes its last entry (a map); a Feature
//! whose kind is not set counts as absent; a list present but empty is an empty list (no
//! default applies). What does not fit the spec is an error naming the feature, and the
//! batch is left as it was before the row.

use std::collections::HashSet;

use serde_json::Value as Json;

use super::field_walk::{varint, Fields, Value, WireError};
use super::spec::{column_names, DType, FeatureConfig, FeatureSpec};
use crate::{ColumnarBatch, Error, Labels, StringColumn};

/// The three lists a Feature may hold, by field number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListKind {
    Bytes = 1,
    Float = 2,
    Int64 = 3,
}

impl ListKind {
    fn of(dtype: DType) -> Self {
        match dtype {
            DType::Float32 => ListKind::Float,
            DType::Int64 => ListKind::Int64,
            DType::String => ListKind::Bytes,
        }
    }

    /// What a feature of this kind holds, for messages.
    fn holds(self) -> &'static str {
        match self {
            ListKind::Bytes => "string values (bytes_list)",
            ListKind::Float => "float32 values (float_list)",
            ListKind::Int64 => "int64 values (int64_list)",
        }
    }
}

/// Where one feature's values go.
#[derive(Clone, Copy, Debug)]
enum Target {
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
enum Fill {
    Dense(Vec<f32>),
    Strings(Vec<String>),
    Class(u32),
    Float(f32),
}

#[derive(Clone, Debug)]
struct Compiled {
    name: String,
    dtype: DType,
    shape: Vec<usize>,
    target: Target,
    default: Option<Fill>,
}

/// The kind of label column a spec gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LabelKind {
    Class,
    Float,
    Name,
}

/// A compiled [`FeatureSpec`]; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct ExampleParser {
    features: Vec<Compiled>,
    /// Feature names, sorted, with their index in `features`.
    keys: Vec<(Box<[u8]>, usize)>,
    dense_width: usize,
    categorical: usize,
    label: Option<LabelKind>,
    label_classes: Option<u32>,
}

/// Where each feature's map entry is in the record being parsed: reused between records.
pub(crate) type Found = Vec<Option<(usize, usize)>>;

fn spec_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::FeatureSpec(format!("feature '{name}': {message}"))
}

impl ExampleParser {
    /// Compiles `spec`; an [`Error::FeatureSpec`] if it cannot work.
    pub(crate) fn new(spec: &FeatureSpec) -> Result<Self, Error> {
        if spec.features.is_empty() {
            return Err(Error::FeatureSpec("no features".into()));
        }
        if let Some(label) = &spec.label {
            match spec.get(label) {
                None => {
                    return Err(Error::FeatureSpec(format!(
                        "label '{label}' is not one of the features"
                    )))
                }
                Some(FeatureConfig::Fixed(f)) if f.shape.iter().product::<usize>() == 1 => {}
                Some(_) => {
                    return Err(spec_error(
                        label,
                        "the label must be a fixed feature of one value (shape [] or [1])",
                    ))
                }
            }
        }
        let label_dtype = spec
            .label
            .as_deref()
            .and_then(|l| spec.get(l))
            .map(FeatureConfig::dtype);
        if let Some(n) = spec.label_classes {
            if label_dtype != Some(DType::Int64) {
                return Err(Error::FeatureSpec(format!(
                    "label_classes = {n} needs an int64 label of class ids"
                )));
            }
        }
        let mut features = Vec::with_capacity(spec.features.len());
        let (mut dense_width, mut categorical) = (0usize, 0usize);
        let mut columns = HashSet::new();
        for (name, feature) in &spec.features {
            if name.is_empty() {
                return Err(Error::FeatureSpec("a feature with an empty name".into()));
            }
            let values = feature
                .values()
                .ok_or_else(|| spec_error(name, "its shape holds more values than memory"))?;
            if values == 0 {
                return Err(spec_error(name, "its shape holds no values"));
            }
            let is_label = spec.label.as_deref() == Some(name.as_str());
            for column in column_names(name, values) {
                if !columns.insert(column.clone()) {
                    return Err(spec_error(
                        name,
                        format!("its column '{column}' has the name of another column"),
                    ));
                }
            }
            let dtype = feature.dtype();
            let (target, shape, default) = match feature {
                FeatureConfig::Fixed(f) => {
                    let target = match dtype {
                        _ if is_label => Target::Label,
                        DType::String => {
                            categorical += values;
                            Target::Categories {
                                column: categorical - values,
                                values,
                            }
                        }
                        DType::Float32 | DType::Int64 => {
                            dense_width += values;
                            Target::Dense { values }
                        }
                    };
                    let default = f
                        .default_value
                        .as_ref()
                        .map(|d| {
                            compile_default(name, d, dtype, values, is_label, spec.label_classes)
                        })
                        .transpose()?;
                    (target, f.shape.clone(), default)
                }
                FeatureConfig::VarLen(_) if dtype == DType::Float32 => {
                    return Err(spec_error(
                        name,
                        "a var_len float32 feature cannot be read: var_len features are read \
                         as one category per row (string or int64 ids); give float values a \
                         fixed shape (with a default_value for examples that lack them)",
                    ))
                }
                FeatureConfig::VarLen(_) => {
                    categorical += 1;
                    (
                        Target::OneCategory {
                            column: categorical - 1,
                        },
                        Vec::new(),
                        None,
                    )
                }
            };
            features.push(Compiled {
                name: name.clone(),
                dtype,
                shape,
                target,
                default,
            });
        }
        let mut keys: Vec<(Box<[u8]>, usize)> = features
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_bytes().into(), i))
            .collect();
        keys.sort();
        let label = label_dtype.map(|dtype| match dtype {
            DType::Int64 => LabelKind::Class,
            DType::Float32 => LabelKind::Float,
            DType::String => LabelKind::Name,
        });
        Ok(ExampleParser {
            features,
            keys,
            dense_width,
            categorical,
            label,
            label_classes: spec.label_classes,
        })
    }

    /// Empties `batch` and sets its layout to this spec's, keeping its allocations.
    pub(crate) fn begin(&self, batch: &mut ColumnarBatch) {
        batch.rows = 0;
        batch.dense_width = self.dense_width;
        batch.dense.clear();
        batch.categorical.truncate(self.categorical);
        batch.categorical.iter_mut().for_each(StringColumn::clear);
        batch
            .categorical
            .resize_with(self.categorical, StringColumn::new);
        batch.labels = match (self.label, std::mem::take(&mut batch.labels)) {
            (None, _) => Labels::None,
            (Some(LabelKind::Class), Labels::Class(mut v)) => {
                v.clear();
                Labels::Class(v)
            }
            (Some(LabelKind::Float), Labels::Float(mut v)) => {
                v.clear();
                Labels::Float(v)
            }
            (Some(LabelKind::Name), Labels::Name(mut v)) => {
                v.clear();
                Labels::Name(v)
            }
            (Some(LabelKind::Class), _) => Labels::Class(Vec::new()),
            (Some(LabelKind::Float), _) => Labels::Float(Vec::new()),
            (Some(LabelKind::Name), _) => Labels::Name(StringColumn::new()),
        };
    }

    /// Appends `record`'s values as a row of `batch` (laid out by [`begin`](Self::begin));
    /// on an error, what is wrong (naming the feature), and `batch` is as it was.
    pub(crate) fn parse_row(
        &self,
        record: &[u8],
        batch: &mut ColumnarBatch,
        found: &mut Found,
    ) -> Result<(), String> {
        let (rows, dense) = (batch.rows, batch.dense.len());
        let result = self
            .locate(record, found)
            .map_err(|e| format!("malformed tf.Example: {e}"))
            .and_then(|()| self.fill(record, found, batch));
        match result {
            Ok(()) => {
                batch.rows += 1;
                Ok(())
            }
            Err(e) => {
                batch.dense.truncate(dense);
                for column in &mut batch.categorical {
                    column.truncate(rows);
                }
                match &mut batch.labels {
                    Labels::None => {}
                    Labels::Float(v) => v.truncate(rows),
                    Labels::Class(v) => v.truncate(rows),
                    Labels::Name(v) => v.truncate(rows),
                }
                Err(e)
            }
        }
    }

    /// Finds the map entry of every feature of the spec (the last one of a name).
    fn locate(&self, record: &[u8], found: &mut Found) -> Result<(), WireError> {
        found.clear();
        found.resize(self.features.len(), None);
        let base = record.as_ptr() as usize;
        for field in Fields::new(record) {
            let (_, number, value) = field?;
            if number != 1 {
                continue;
            }
            let Value::Len(features) = value else {
                return Err("Example.features is not length-delimited");
            };
            for field in Fields::new(features) {
                let (_, number, value) = field?;
                if number != 1 {
                    continue;
                }
                let Value::Len(entry) = value else {
                    return Err("a Features.feature entry is not length-delimited");
                };
                let mut key: &[u8] = b"";
                for field in Fields::new(entry) {
                    match field? {
                        (_, 1, Value::Len(name)) => key = name,
                        (_, 2, Value::Len(_)) => {}
                        (_, 1 | 2, _) => {
                            return Err("a feature's name or value is not length-delimited")
                        }
                        _ => {}
                    }
                }
                if let Ok(at) = self.keys.binary_search_by(|(k, _)| (**k).cmp(key)) {
                    let start = entry.as_ptr() as usize - base;
                    found[self.keys[at].1] = Some((start, start + entry.len()));
                }
            }
        }
        Ok(())
    }

    /// Writes every feature's values, in spec order.
    fn fill(&self, record: &[u8], found: &Found, batch: &mut ColumnarBatch) -> Result<(), String> {
        for (feature, at) in self.features.iter().zip(found) {
            let entry = at.map(|(start, end)| &record[start..end]);
            let lists = match entry {
                Some(entry) => locate_lists(entry)
                    .map_err(|e| {
                        format!("malformed tf.Example: {e} in feature '{}'", feature.name)
                    })?
                    .map(|(kind, at, within)| (entry, kind, at, within)),
                None => None,
            };
            let Some((entry, kind, at, within)) = lists else {
                feature.fill_missing(batch)?;
                continue;
            };
            if kind != ListKind::of(feature.dtype) {
                return Err(format!(
                    "feature '{}' holds {}, the spec says {}",
                    feature.name,
                    kind.holds(),
                    feature.dtype.name()
                ));
            }
            let lists = Lists {
                entry,
                kind,
                at,
                within,
            };
            feature
                .fill(&lists, batch, self.label_classes)
                .map_err(|e| match e {
                    FillError::Wire(e) => {
                        format!("malformed tf.Example: {e} in feature '{}'", feature.name)
                    }
                    FillError::Message(m) => m,
                })?;
        }
        Ok(())
    }
}

/// The lists of a feature's final kind: protobuf merges a Feature given twice, so its
/// values are every list of the kind set last, from where that kind was set.
struct Lists<'a> {
    entry: &'a [u8],
    kind: ListKind,
    /// Offset in `entry` of the value field where the kind was set.
    at: usize,
    /// Offset in that value of the list field that set it.
    within: usize,
}

impl<'a> Lists<'a> {
    /// Calls `f` with each list message, in order.
    fn each(&self, mut f: impl FnMut(&'a [u8]) -> Result<(), FillError>) -> Result<(), FillError> {
        for field in Fields::from_offset(self.entry, self.at) {
            let (offset, number, value) = field?;
            let (2, Value::Len(feature)) = (number, value) else {
                continue;
            };
            let from = if offset == self.at { self.within } else { 0 };
            for field in Fields::from_offset(feature, from) {
                if let (_, number, Value::Len(list)) = field? {
                    if number == self.kind as u32 {
                        f(list)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Every float value, in order.
    fn floats(&self, mut f: impl FnMut(&[u8])) -> Result<(), FillError> {
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(packed)) if packed.len() % 4 == 0 => f(packed),
                    (_, 1, Value::Len(_)) => {
                        return Err(FillError::Wire(
                            "packed floats whose length is not a multiple of 4",
                        ))
                    }
                    (_, 1, Value::Fixed32(bytes)) => f(&bytes),
                    (_, 1, _) => return Err(FillError::Wire("float values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every int64 value, in order.
    fn ints(&self, mut f: impl FnMut(i64) -> Result<(), FillError>) -> Result<(), FillError> {
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(packed)) => {
                        let mut pos = 0;
                        while pos < packed.len() {
                            f(varint(packed, &mut pos)? as i64)?;
                        }
                    }
                    (_, 1, Value::Varint(v)) => f(v as i64)?,
                    (_, 1, _) => return Err(FillError::Wire("int64 values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every bytes value, in order.
    fn bytes(&self, mut f: impl FnMut(&'a [u8]) -> Result<(), FillError>) -> Result<(), FillError> {
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(bytes)) => f(bytes)?,
                    (_, 1, _) => return Err(FillError::Wire("bytes values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }
}

/// The final kind of a feature's map entry and where it was set; `None` if no kind is set.
fn locate_lists(entry: &[u8]) -> Result<Option<(ListKind, usize, usize)>, WireError> {
    let mut found: Option<(ListKind, usize, usize)> = None;
    for field in Fields::new(entry) {
        let (at, number, value) = field?;
        if number != 2 {
            continue;
        }
        let Value::Len(feature) = value else {
            return Err("a feature's value is not length-delimited");
        };
        for field in Fields::new(feature) {
            let (within, number, value) = field?;
            let kind = match number {
                1 => ListKind::Bytes,
                2 => ListKind::Float,
                3 => ListKind::Int64,
                _ => continue,
            };
            if !matches!(value, Value::Len(_)) {
                return Err("a value list is not length-delimited");
            }
            if found.map(|f| f.0) != Some(kind) {
                found = Some((kind, at, within));
            }
        }
    }
    Ok(found)
}

enum FillError {
    Wire(WireError),
    Message(String),
}

impl From<WireError> for FillError {
    fn from(e: WireError) -> Self {
        FillError::Wire(e)
    }
}

/// Index of the first NaN or infinity. The common case, none, is checked by a fold without
/// an early exit, which the compiler vectorises: a search that stops at the first one costs
/// more than decoding the values.
fn first_non_finite(values: &[f32]) -> Option<usize> {
    if values.iter().fold(true, |all, v| all & v.is_finite()) {
        return None;
    }
    values.iter().position(|v| !v.is_finite())
}

/// A shape as TensorFlow prints it.
fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(","))
}

impl Compiled {
    fn message(&self, text: impl std::fmt::Display) -> FillError {
        FillError::Message(format!("feature '{}' {text}", self.name))
    }

    fn count_error(&self, found: usize, values: usize) -> FillError {
        self.message(format!(
            "holds {found} values, its shape {} needs {values}",
            shape_text(&self.shape)
        ))
    }

    /// Writes the values of `lists` (of this feature's kind).
    fn fill(
        &self,
        lists: &Lists<'_>,
        batch: &mut ColumnarBatch,
        classes: Option<u32>,
    ) -> Result<(), FillError> {
        match self.target {
            Target::Dense { values } => {
                let start = batch.dense.len();
                match self.dtype {
                    // Fixed-size chunks, so that the copy is vectorised (a run-time chunk
                    // size made it a loop of one value a time, a third of the decoding).
                    DType::Float32 => lists.floats(|bytes| {
                        let (values, _) = bytes.as_chunks::<4>();
                        batch
                            .dense
                            .extend(values.iter().map(|b| f32::from_le_bytes(*b)))
                    })?,
                    _ => lists.ints(|v| {
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
                lists.bytes(|bytes| {
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
                    DType::String => lists.bytes(|bytes| {
                        if n == 0 {
                            text.push_str(self.utf8(n, bytes)?);
                        }
                        n += 1;
                        Ok(())
                    })?,
                    _ => lists.ints(|v| {
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
                    (DType::Int64, Labels::Class(out)) => lists.ints(|v| {
                        n += 1;
                        if n == 1 {
                            out.push(self.class_id(v, classes)?);
                        }
                        Ok(())
                    })?,
                    (DType::Float32, Labels::Float(out)) => lists.floats(|bytes| {
                        for b in bytes.as_chunks::<4>().0 {
                            n += 1;
                            if n == 1 {
                                out.push(f32::from_le_bytes(*b));
                            }
                        }
                    })?,
                    (DType::String, Labels::Name(out)) => lists.bytes(|bytes| {
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
    fn fill_missing(&self, batch: &mut ColumnarBatch) -> Result<(), String> {
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
                _ => {
                    return Err(format!(
                        "feature '{}': a default of another kind",
                        self.name
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "feature '{}' is missing and the spec gives it no default_value",
                    self.name
                ))
            }
        }
        Ok(())
    }

    fn utf8<'b>(&self, index: usize, bytes: &'b [u8]) -> Result<&'b str, FillError> {
        std::str::from_utf8(bytes).map_err(|e| {
            self.message(format!(
                "value {index} is not UTF-8 (byte {} of '{}')",
                e.valid_up_to(),
                crate::error::excerpt(bytes)
            ))
        })
    }

    fn class_id(&self, v: i64, classes: Option<u32>) -> Result<u32, FillError> {
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

    fn label_name<'b>(&self, bytes: &'b [u8]) -> Result<&'b str, FillError> {
        let name = self.utf8(0, bytes)?;
        if name.trim().is_empty() {
            return Err(self.message("holds an empty class name"));
        }
        Ok(name)
    }
}

/// A default given as JSON, checked against the feature's type and number of values.
fn compile_default(
    name: &str,
    value: &Json,
    dtype: DType,
    values: usize,
    is_label: bool,
    classes: Option<u32>,
) -> Result<Fill, Error> {
    let mut flat = Vec::new();
    flatten(value, &mut flat);
    if flat.len() != 1 && flat.len() != values {
        return Err(spec_error(
            name,
            format!(
                "default_value holds {} values; give one (repeated) or {values}",
                flat.len()
            ),
        ));
    }
    let bad = |v: &Json| {
        spec_error(
            name,
            format!(
                "default_value {v} is not a {} value",
                match dtype {
                    DType::Float32 => "finite float32",
                    DType::Int64 => "int64 (an integer)",
                    DType::String => "string",
                }
            ),
        )
    };
    let fill = match dtype {
        DType::Float32 => Fill::Dense(
            flat.iter()
                .map(|v| {
                    v.as_f64()
                        .map(|x| x as f32)
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| bad(v))
                })
                .collect::<Result<_, _>>()?,
        ),
        DType::Int64 => Fill::Dense(
            flat.iter()
                .map(|v| v.as_i64().map(|x| x as f32).ok_or_else(|| bad(v)))
                .collect::<Result<_, _>>()?,
        ),
        DType::String => Fill::Strings(
            flat.iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| bad(v)))
                .collect::<Result<_, _>>()?,
        ),
    };
    let fill = match fill {
        Fill::Dense(v) if v.len() == 1 && values > 1 => Fill::Dense(vec![v[0]; values]),
        Fill::Strings(v) if v.len() == 1 && values > 1 => Fill::Strings(vec![v[0].clone(); values]),
        other => other,
    };
    if !is_label {
        return Ok(fill);
    }
    match (dtype, fill) {
        (DType::Int64, _) => {
            let v = flat[0].as_i64().ok_or_else(|| bad(flat[0]))?;
            match u32::try_from(v) {
                Ok(id) if classes.is_none_or(|n| id < n) => Ok(Fill::Class(id)),
                _ => Err(spec_error(
                    name,
                    format!("default_value {v} is not a class id of the label"),
                )),
            }
        }
        (DType::Float32, Fill::Dense(v)) => Ok(Fill::Float(v[0])),
        (DType::String, Fill::Strings(v)) if !v[0].trim().is_empty() => Ok(Fill::Strings(v)),
        _ => Err(spec_error(name, "default_value is not a class name")),
    }
}

/// The scalars of a (possibly nested) JSON array, in order; a scalar is itself.
fn flatten<'a>(value: &'a Json, out: &mut Vec<&'a Json>) {
    match value {
        Json::Array(items) => items.iter().for_each(|v| flatten(v, out)),
        scalar => out.push(scalar),
    }
}
// Here rather than in spec.rs: validating is building a parser, and the spec's types import
// nothing of the parser that reads them.
impl FeatureSpec {
    /// Checks what the JSON form cannot: at least one feature, a label that is a fixed
    /// feature of one value, shapes with values, defaults of the feature's type and size,
    /// var-len features of strings or ids, and column names that do not collide.
    pub fn validate(&self) -> Result<(), Error> {
        ExampleParser::new(self).map(|_| ())
    }
}
