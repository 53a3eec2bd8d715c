//! The serving signature: what a served model takes and returns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most dimensions a tensor has (TensorFlow's `TensorShape::MaxDimensions()`); a served
/// input's tensor has the batch's besides its shape's.
const MAX_DIMS: usize = 254;

/// Element type of a serving input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    /// 32-bit float.
    Float32,
    /// 64-bit integer.
    Int64,
    /// UTF-8 string (categorical features).
    String,
}

/// One named serving input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSpec {
    /// Feature name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Shape per example (empty for a scalar feature).
    pub shape: Vec<usize>,
}

/// The serving signature (TF's `serving_default`): named inputs, named outputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Signature {
    /// Inputs, in order.
    pub inputs: Vec<InputSpec>,
    /// Output keys each prediction carries (`class_ids`, `probabilities`, …).
    pub outputs: Vec<String>,
    /// The shape per example of the outputs that have one recorded (`probabilities`: `[3]`),
    /// which a server's metadata gives after the batch's dimension.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub output_shapes: BTreeMap<String, Vec<usize>>,
}

impl Signature {
    /// An empty signature.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a scalar input.
    pub fn with_input(mut self, name: impl Into<String>, dtype: DType) -> Self {
        self.inputs.push(InputSpec {
            name: name.into(),
            dtype,
            shape: Vec::new(),
        });
        self
    }

    /// Adds an input with a per-example shape.
    pub fn with_shaped_input(
        mut self,
        name: impl Into<String>,
        dtype: DType,
        shape: Vec<usize>,
    ) -> Self {
        self.inputs.push(InputSpec {
            name: name.into(),
            dtype,
            shape,
        });
        self
    }

    /// Adds an output key.
    pub fn with_output(mut self, key: impl Into<String>) -> Self {
        self.outputs.push(key.into());
        self
    }

    /// Adds an output key with its shape per example.
    pub fn with_shaped_output(mut self, key: impl Into<String>, shape: Vec<usize>) -> Self {
        let key = key.into();
        self.output_shapes.insert(key.clone(), shape);
        self.with_output(key)
    }

    /// What makes the signature one no request can be served by, if anything: an input
    /// without a name or named twice, a shape with a 0 (no values to feed) or with more
    /// dimensions than a tensor has, an output named twice. A server would otherwise refuse
    /// every request, or answer with the first of two same-named values.
    pub(crate) fn fault(&self) -> Option<String> {
        for (i, input) in self.inputs.iter().enumerate() {
            let name = &input.name;
            if name.is_empty() {
                return Some(format!("input {i} (from 0) has an empty name"));
            }
            if let Some(first) = self.inputs[..i].iter().position(|p| &p.name == name) {
                return Some(format!(
                    "inputs {first} and {i} (from 0) are both named '{name}'"
                ));
            }
            let shape = &input.shape;
            if shape.len() >= MAX_DIMS {
                return Some(format!(
                    "input '{name}' has {} dimensions, which with the batch's are more than \
                     {MAX_DIMS}, the most a tensor has",
                    shape.len()
                ));
            }
            if shape.contains(&0) {
                return Some(format!(
                    "input '{name}' has shape {shape:?}: a dimension of 0 leaves it no values"
                ));
            }
        }
        if let Some(key) = (self.output_shapes.keys()).find(|key| !self.outputs.contains(key)) {
            return Some(format!(
                "a shape is given for '{key}', which is not an output"
            ));
        }
        for (i, output) in self.outputs.iter().enumerate() {
            if let Some(first) = self.outputs[..i].iter().position(|o| o == output) {
                return Some(format!(
                    "outputs {first} and {i} (from 0) are both named '{output}'"
                ));
            }
        }
        None
    }
}
