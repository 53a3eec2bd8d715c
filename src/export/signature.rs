//! The serving signature: what a served model takes and returns.

use serde::{Deserialize, Serialize};

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
}
