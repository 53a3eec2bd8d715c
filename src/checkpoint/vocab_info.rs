//! [`VocabInfo`] (TF's `tf.estimator.VocabInfo`): a variable indexed by a vocabulary, carried
//! over by a warm start when the vocabulary changed between the two runs.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::VariableValue;
use crate::error::{Error, Result};

/// How a warm start carries a variable over whose dimension `axis` is indexed by a
/// vocabulary, when the checkpoint's vocabulary differs from the model's (TF's
/// `tf.estimator.VocabInfo`): an embedding's rows (`axis` 0), an output layer's columns
/// over the class names (`axis` 1 of a `[units, classes]` weight, `axis` 0 of its bias).
///
/// Each entry of `new_vocab` takes the values the checkpoint holds for the same entry of
/// `old_vocab`; an entry the old vocabulary lacks keeps the model's own initial values (TF's
/// `backup_initializer`). The `num_oov_buckets` out-of-vocabulary buckets after each
/// vocabulary are carried one to one, as in TF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VocabInfo {
    /// The model's vocabulary, in id order.
    pub new_vocab: Vec<String>,
    /// The checkpoint's vocabulary, in id order.
    pub old_vocab: Vec<String>,
    /// Out-of-vocabulary buckets after either vocabulary (default 0).
    #[serde(default)]
    pub num_oov_buckets: usize,
    /// The dimension the vocabulary indexes (default 0).
    #[serde(default)]
    pub axis: usize,
}

impl VocabInfo {
    /// Entries of `new_vocab` take the values of the same entries of `old_vocab`, along the
    /// variable's first dimension, with no out-of-vocabulary bucket.
    pub fn new(new_vocab: Vec<String>, old_vocab: Vec<String>) -> Self {
        Self {
            new_vocab,
            old_vocab,
            num_oov_buckets: 0,
            axis: 0,
        }
    }

    /// The two vocabularies read from TF's vocabulary files: one entry per line.
    pub fn from_files(new_vocab: &Path, old_vocab: &Path) -> Result<Self> {
        Ok(Self::new(
            read_vocab_file(new_vocab)?,
            read_vocab_file(old_vocab)?,
        ))
    }

    /// With `n` out-of-vocabulary buckets after each vocabulary.
    pub fn with_num_oov_buckets(mut self, n: usize) -> Self {
        self.num_oov_buckets = n;
        self
    }

    /// Along dimension `axis` of the variable.
    pub fn with_axis(mut self, axis: usize) -> Self {
        self.axis = axis;
        self
    }

    /// The model's variable `name`, of `shape` and values `initial`, with the values
    /// `previous` holds for the entries both vocabularies have. An error says what does not
    /// fit, naming the variable.
    pub(crate) fn remap(
        &self,
        name: &str,
        previous: &VariableValue,
        shape: &[usize],
        initial: &[f32],
    ) -> Result<Vec<f32>> {
        let refuse = |why: String| Err(Error::Config(format!("warm start of '{name}': {why}")));
        let axis = self.axis;
        let (new_len, old_len) = (self.new_vocab.len(), self.old_vocab.len());
        let oov = self.num_oov_buckets;
        if axis >= shape.len() || axis >= previous.shape.len() {
            return refuse(format!("axis {axis}, but the variable has shape {shape:?}"));
        }
        if shape[axis] != new_len + oov || previous.shape[axis] != old_len + oov {
            return refuse(format!(
                "dimension {axis} is {} in the model and {} in the checkpoint, where the \
                 vocabularies and {oov} OOV bucket(s) give {} and {}",
                shape[axis],
                previous.shape[axis],
                new_len + oov,
                old_len + oov
            ));
        }
        let mut old_index = HashMap::with_capacity(old_len);
        for (i, entry) in self.old_vocab.iter().enumerate() {
            old_index.entry(entry.as_str()).or_insert(i);
        }
        let sources: Vec<Option<usize>> = (self.new_vocab.iter())
            .map(|entry| old_index.get(entry.as_str()).copied())
            .chain((0..oov).map(|k| Some(old_len + k)))
            .collect();
        if sources.iter().all(Option::is_none) {
            // Nothing to carry over: the model's own values, whatever else the shapes say.
            return Ok(initial.to_vec());
        }
        let others = |s: &[usize]| [&s[..axis], &s[axis + 1..]].concat();
        if others(shape) != others(&previous.shape) {
            return refuse(format!(
                "shape {shape:?} in the model, {:?} in the checkpoint: only dimension {axis} \
                 may differ",
                previous.shape
            ));
        }
        let inner: usize = shape[axis + 1..].iter().product();
        let outer: usize = shape[..axis].iter().product();
        let (new_axis, old_axis) = (shape[axis], previous.shape[axis]);
        let mut values = initial.to_vec();
        for o in 0..outer {
            for (i, source) in sources.iter().enumerate() {
                let Some(j) = source else { continue };
                let to = (o * new_axis + i) * inner;
                let from = (o * old_axis + j) * inner;
                values[to..to + inner].copy_from_slice(&previous.values[from..from + inner]);
            }
        }
        Ok(values)
    }
}

/// A TF vocabulary file's entries: one per line, in id order.
fn read_vocab_file(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(text.lines().map(str::to_string).collect())
}

#[cfg(test)]
mod tests;
