//! A checkpoint's weights read by name, without building the model: what TF's
//! `tf.train.load_variable` and `Estimator.get_variable_value` read, and what warm start
//! copies from.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use super::contents::MODEL_SECTION;
use super::Checkpoint;
use crate::error::{Error, Result};

/// One variable as a checkpoint holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct VariableValue {
    /// Its shape (`[rows, columns]` for a linear layer's weight).
    pub shape: Vec<usize>,
    /// Its values in row-major order.
    pub values: Vec<f32>,
}

/// The weights section of one checkpoint, by variable name (the model's dotted parameter
/// paths, as `network.layers.0.weight`).
pub(crate) struct StoredWeights<'a> {
    path: &'a Path,
    tensors: SafeTensors<'a>,
}

impl<'a> StoredWeights<'a> {
    /// The weights of `checkpoint`, read from `path` (which errors name).
    pub fn of(path: &'a Path, checkpoint: &'a Checkpoint) -> Result<Self> {
        let weights = checkpoint
            .section(MODEL_SECTION)
            .ok_or_else(|| Error::checkpoint(path, "has no 'model' section"))?;
        let tensors = SafeTensors::deserialize(weights).map_err(|e| {
            Error::checkpoint(path, format!("weights are not valid safetensors: {e}"))
        })?;
        Ok(StoredWeights { path, tensors })
    }

    /// Every variable's name, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tensors
            .names()
            .into_iter()
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    /// The variable `name`, or `None` when the checkpoint has none of that name; an error
    /// naming it when it is not stored as `f32`, as this crate's checkpoints always are.
    pub fn value(&self, name: &str) -> Result<Option<VariableValue>> {
        let Ok(tensor) = self.tensors.tensor(name) else {
            return Ok(None);
        };
        if tensor.dtype() != Dtype::F32 {
            return Err(Error::checkpoint(
                self.path,
                format!("variable '{name}' is {:?}, not F32", tensor.dtype()),
            ));
        }
        let values = tensor
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(Some(VariableValue {
            shape: tensor.shape().to_vec(),
            values,
        }))
    }

    /// The variable `name`; an error naming the checkpoint and a few of the names it has
    /// when there is none of that name.
    pub fn require(&self, name: &str) -> Result<VariableValue> {
        self.value(name)?.ok_or_else(|| {
            let names = self.names();
            let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
            let more = match names.len() - shown.len() {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            Error::checkpoint(
                self.path,
                format!("no variable '{name}' (it holds {}{more})", shown.join(", ")),
            )
        })
    }
}
