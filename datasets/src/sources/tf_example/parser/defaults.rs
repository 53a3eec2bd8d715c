//! A feature's `default_value`, given as JSON, checked against its type and size.

use serde_json::Value as Json;

use super::super::spec::DType;
use super::feature::Fill;
use crate::Error;

pub(super) fn spec_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::FeatureSpec(format!("feature '{name}': {message}"))
}

/// A default given as JSON, checked against the feature's type and number of values.
pub(super) fn compile_default(
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
