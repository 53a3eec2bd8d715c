//! REST answers written from output tensors: the JSON text
//! [`predict_response`](crate::request::predict_response),
//! [`classify_response`](crate::request::classify_response) and
//! [`regress_response`](crate::request::regress_response) write from each prediction's
//! values, with no JSON value per element between.

use estimator::export::{ServingTensor, TensorElements};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

use crate::error::ServeError;
use crate::request::Format;

/// A REST answer from tensors, the batch first in every one.
pub(crate) enum TensorResponse {
    /// `:predict`'s outputs `(name, tensor)`, sorted by name, in a format.
    Predict(Format, Vec<(String, ServingTensor)>),
    /// `:classify`'s `[class, score]` pairs: `all_classes` and `probabilities`, `[batch, k]`.
    Classify(ServingTensor, ServingTensor),
    /// `:regress`'s one value per example: `predictions`, `[batch, 1]`.
    Regress(ServingTensor),
}

impl TensorResponse {
    /// The `:predict` answer of `outputs`; a JSON object writes its members by name, so
    /// they are sorted here as `serde_json::Map` sorts them.
    pub(crate) fn predict(format: Format, mut outputs: Vec<(String, ServingTensor)>) -> Self {
        outputs.sort_by(|a, b| a.0.cmp(&b.0));
        Self::Predict(format, outputs)
    }

    /// The `:classify` answer of the tensors of `all_classes` and `probabilities`.
    pub(crate) fn classify(tensors: Vec<ServingTensor>) -> Result<Self, ServeError> {
        match <[_; 2]>::try_from(tensors) {
            Ok([classes, scores])
                if matches!(classes.elements, TensorElements::String(_))
                    && matches!(scores.elements, TensorElements::Float32(_))
                    && classes.shape.len() == 2
                    && classes.shape == scores.shape =>
            {
                Ok(Self::Classify(classes, scores))
            }
            _ => Err(ServeError::BadRequest(
                "this model is not a classifier: use regress or predict".into(),
            )),
        }
    }

    /// The `:regress` answer of the tensor of `predictions`.
    pub(crate) fn regress(tensors: Vec<ServingTensor>) -> Result<Self, ServeError> {
        match <[_; 1]>::try_from(tensors) {
            Ok([values]) if values.shape.get(1..) == Some(&[1]) => Ok(Self::Regress(values)),
            _ => Err(ServeError::BadRequest(
                "this model is not a single-target regressor: use predict".into(),
            )),
        }
    }
}

impl Serialize for TensorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_map(Some(1))?;
        match self {
            Self::Predict(format, outputs) => match (format, outputs.as_slice()) {
                (Format::Row, [(_, tensor)]) => {
                    body.serialize_entry("predictions", &Rows(tensor))?
                }
                (Format::Row, outputs) => body.serialize_entry("predictions", &Named(outputs))?,
                (Format::Columnar, [(_, tensor)]) => {
                    body.serialize_entry("outputs", &Rows(tensor))?
                }
                (Format::Columnar, outputs) => {
                    body.serialize_entry("outputs", &Columns(outputs))?
                }
            },
            Self::Classify(classes, scores) => {
                body.serialize_entry("result", &ClassScores(classes, scores))?
            }
            Self::Regress(values) => body.serialize_entry("result", &Elements(values))?,
        }
        body.end()
    }
}

/// Per row, `[class, score]` for every class.
struct ClassScores<'a>(&'a ServingTensor, &'a ServingTensor);

impl Serialize for ClassScores<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (batch, row) = batch_and_row(self.0);
        let width: usize = row.iter().product();
        serializer.collect_seq((0..batch).map(|r| ClassRow(self, r * width..(r + 1) * width)))
    }
}

/// Elements `range` of a row's classes and scores, in pairs.
struct ClassRow<'a>(&'a ClassScores<'a>, std::ops::Range<usize>);

impl Serialize for ClassRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ClassScores(classes, scores) = self.0;
        serializer.collect_seq(
            self.1
                .clone()
                .map(|i| (element(classes, i), element(scores, i))),
        )
    }
}

/// Every element of `tensor`, as one list.
struct Elements<'a>(&'a ServingTensor);

impl Serialize for Elements<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((0..self.0.elements.len()).map(|i| element(self.0, i)))
    }
}

/// Element `i` of `tensor` (row-major).
fn element(tensor: &ServingTensor, i: usize) -> Nested<'_> {
    Nested {
        elements: &tensor.elements,
        start: i,
        shape: &[],
    }
}

/// A tensor as the list of its rows.
struct Rows<'a>(&'a ServingTensor);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (batch, row) = batch_and_row(self.0);
        serializer.collect_seq((0..batch).map(|i| row_of(self.0, row, i)))
    }
}

/// Per row of the batch, an object of every output's row.
struct Named<'a>(&'a [(String, ServingTensor)]);

impl Serialize for Named<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let batch = self.0.first().map_or(0, |(_, t)| batch_and_row(t).0);
        let mut rows = serializer.serialize_seq(Some(batch))?;
        for i in 0..batch {
            rows.serialize_element(&NamedRow(self.0, i))?;
        }
        rows.end()
    }
}

struct NamedRow<'a>(&'a [(String, ServingTensor)], usize);

impl Serialize for NamedRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut row = serializer.serialize_map(Some(self.0.len()))?;
        for (name, tensor) in self.0 {
            row.serialize_entry(name, &row_of(tensor, batch_and_row(tensor).1, self.1))?;
        }
        row.end()
    }
}

/// An object of every output's rows.
struct Columns<'a>(&'a [(String, ServingTensor)]);

impl Serialize for Columns<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, tensor)| (name, Rows(tensor))))
    }
}

/// The batch and the shape of a row (a tensor without dimensions is one row of one value).
fn batch_and_row(tensor: &ServingTensor) -> (usize, &[usize]) {
    match tensor.shape.split_first() {
        Some((&batch, row)) => (batch, row),
        None => (1, &[]),
    }
}

/// Row `i` of `tensor`, nested as `shape`.
fn row_of<'a>(tensor: &'a ServingTensor, shape: &'a [usize], i: usize) -> Nested<'a> {
    let width: usize = shape.iter().product();
    Nested {
        elements: &tensor.elements,
        start: i * width,
        shape,
    }
}

/// The elements from `start` on, nested as `shape` (one element for a scalar).
struct Nested<'a> {
    elements: &'a TensorElements,
    start: usize,
    shape: &'a [usize],
}

impl Serialize for Nested<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some((&len, inner)) = self.shape.split_first() else {
            return match self.elements {
                TensorElements::Float32(v) => serialize_f32(v[self.start], serializer),
                TensorElements::Int64(v) => serializer.serialize_i64(v[self.start]),
                TensorElements::String(v) => serializer.serialize_str(&v[self.start]),
            };
        };
        let width: usize = inner.iter().product();
        serializer.collect_seq((0..len).map(|k| Nested {
            elements: self.elements,
            start: self.start + k * width,
            shape: inner,
        }))
    }
}

/// `x` in the digits a prediction's JSON value writes: an `f32`'s shortest digits, read as
/// the `f64` nearest them (`prediction_json`). serde_json writes that `f64` as the `f32`
/// itself, except where the two types switch to exponents at different magnitudes
/// (1e-6 ≤ |x| < 1e-5 and |x| ≥ 1e13, found by writing every `f32` both ways), where
/// the `f64` is written.
fn serialize_f32<S: Serializer>(x: f32, serializer: S) -> Result<S::Ok, S::Error> {
    let magnitude = x.abs();
    if (9e-7..1e-5).contains(&magnitude) || (magnitude >= 1e13 && x.is_finite()) {
        let digits = serde_json::to_string(&x).map_err(serde::ser::Error::custom)?;
        let wide: f64 = digits.parse().unwrap_or(f64::from(x));
        return serializer.serialize_f64(wide);
    }
    serializer.serialize_f32(x)
}

#[cfg(test)]
mod tests;
