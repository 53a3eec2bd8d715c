//! A checkpoint's weights read by name, without building the model: TF's
//! `tf.train.list_variables` and `tf.train.load_variable` (behind `Estimator`'s
//! `get_variable_names` and `get_variable_value`), and what warm start copies from.

use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};

use super::contents::MODEL_SECTION;
use super::{Checkpoint, CheckpointManager};
use crate::error::{Error, Result};

/// Every variable of the checkpoint `ckpt_dir_or_file` (a checkpoint file, or a model
/// directory's latest), with its shape, sorted by name (TF's `tf.train.list_variables`): the
/// model's parameters by dotted path, as `layers.0.weight`. The optimizer's state is saved
/// beside them, not listed.
pub fn list_variables(ckpt_dir_or_file: impl AsRef<Path>) -> Result<Vec<(String, Vec<usize>)>> {
    let (path, checkpoint) = required_checkpoint(ckpt_dir_or_file.as_ref())?;
    Ok(StoredWeights::of(&path, &checkpoint)?.variables())
}

/// The variable `name` of the checkpoint `ckpt_dir_or_file` (a checkpoint file, or a model
/// directory's latest; TF's `tf.train.load_variable`); an error naming the checkpoint when
/// it has no such variable.
pub fn load_variable(ckpt_dir_or_file: impl AsRef<Path>, name: &str) -> Result<VariableValue> {
    let (path, checkpoint) = required_checkpoint(ckpt_dir_or_file.as_ref())?;
    StoredWeights::of(&path, &checkpoint)?.require(name)
}

/// The checkpoint `ckpt_dir_or_file` names, as TF reads that argument: the file itself, or
/// a model directory's latest; `None` for a directory with no checkpoint yet.
pub(crate) fn read_checkpoint(ckpt_dir_or_file: &Path) -> Result<Option<(PathBuf, Checkpoint)>> {
    if ckpt_dir_or_file.is_dir() {
        return CheckpointManager::new(ckpt_dir_or_file, None).latest();
    }
    let dir = ckpt_dir_or_file.parent().unwrap_or(Path::new("."));
    let checkpoint = CheckpointManager::new(dir, None).load(ckpt_dir_or_file)?;
    Ok(Some((ckpt_dir_or_file.to_path_buf(), checkpoint)))
}

fn required_checkpoint(ckpt_dir_or_file: &Path) -> Result<(PathBuf, Checkpoint)> {
    read_checkpoint(ckpt_dir_or_file)?.ok_or_else(|| {
        Error::checkpoint(
            ckpt_dir_or_file,
            "no checkpoint found: train the model first",
        )
    })
}

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

    /// Every variable's name and shape, sorted by name.
    pub fn variables(&self) -> Vec<(String, Vec<usize>)> {
        let mut variables: Vec<(String, Vec<usize>)> = self
            .tensors
            .tensors()
            .into_iter()
            .map(|(name, view)| (name, view.shape().to_vec()))
            .collect();
        variables.sort();
        variables
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
            let names = self.variables();
            let shown: Vec<&str> = names.iter().take(8).map(|(n, _)| n.as_str()).collect();
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
