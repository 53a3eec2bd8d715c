//! Warm start (TF's `WarmStartSettings`): a new model's variables initialised from another
//! run's checkpoint, before its first step.

use std::collections::BTreeMap;
use std::path::PathBuf;

use burn::module::Module;
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use super::variables::{read_checkpoint, StoredWeights};
use super::{Checkpoint, VocabInfo};
use crate::error::{Error, Result};
use crate::state::{load_values, parameter_values, untrained_values};

/// Which variables a warm start initialises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VarsToWarmStart {
    /// Every trainable variable (TF's default `".*"`).
    #[default]
    All,
    /// The trainable variables whose name matches this regular expression from its start
    /// (as TF's `re.match`), e.g. `"hidden"` or `".*weight"`.
    Regex(String),
    /// These variables, by name, trainable or not (as TF's list, which reads the global
    /// variables): how a frozen embedding table gets pretrained values.
    List(Vec<String>),
}

impl VarsToWarmStart {
    /// Whether these settings take the variable `name` (a regular expression that does not
    /// compile takes none; [`WarmStartSettings::apply`] says why).
    pub fn selects(&self, name: &str) -> bool {
        match self {
            VarsToWarmStart::All => true,
            VarsToWarmStart::Regex(pattern) => regex::Regex::new(&format!("^(?:{pattern})"))
                .is_ok_and(|regex| regex.is_match(name)),
            VarsToWarmStart::List(names) => names.iter().any(|n| n == name),
        }
    }

    /// Whether it takes variables that training does not update, as TF's: a list of names
    /// does (it reads the global variables), a pattern does not.
    pub fn takes_untrained(&self) -> bool {
        matches!(self, VarsToWarmStart::List(_))
    }
}

/// Where a warm start reads and what it takes (TF's `tf.estimator.WarmStartSettings`).
///
/// Applied by the chief when training starts in a model directory with no checkpoint of its
/// own (a restart resumes from its own checkpoints instead); every other task then gets the
/// values as it gets the chief's (broadcast, or from the ps tasks). Optimizer slots are not
/// carried over, as in TF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmStartSettings {
    /// A checkpoint file, or a model directory (its latest checkpoint).
    pub ckpt_to_initialize_from: PathBuf,
    /// Which variables to initialise.
    #[serde(default)]
    pub vars_to_warm_start: VarsToWarmStart,
    /// A variable's name in the checkpoint when it differs from the model's:
    /// model name → checkpoint name.
    #[serde(default)]
    pub var_name_to_prev_var_name: BTreeMap<String, String>,
    /// How a variable indexed by a vocabulary that changed is carried over, by the model's
    /// variable name; every other variable is copied whole, of the same shape.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub var_name_to_vocab_info: BTreeMap<String, VocabInfo>,
}

impl WarmStartSettings {
    /// Every trainable variable from `ckpt_to_initialize_from` (a file or a model dir).
    pub fn new(ckpt_to_initialize_from: impl Into<PathBuf>) -> Self {
        Self {
            ckpt_to_initialize_from: ckpt_to_initialize_from.into(),
            vars_to_warm_start: VarsToWarmStart::All,
            var_name_to_prev_var_name: BTreeMap::new(),
            var_name_to_vocab_info: BTreeMap::new(),
        }
    }

    /// Only the variables `vars` selects.
    pub fn with_vars(mut self, vars: VarsToWarmStart) -> Self {
        self.vars_to_warm_start = vars;
        self
    }

    /// Reads the model's variable `name` from the checkpoint's `prev_name`.
    pub fn with_prev_var_name(
        mut self,
        name: impl Into<String>,
        prev_name: impl Into<String>,
    ) -> Self {
        self.var_name_to_prev_var_name
            .insert(name.into(), prev_name.into());
        self
    }

    /// Carries the model's variable `name` over as `info` says: along a vocabulary that
    /// changed since the checkpoint was written (TF's `var_name_to_vocab_info`).
    pub fn with_vocab_info(mut self, name: impl Into<String>, info: VocabInfo) -> Self {
        self.var_name_to_vocab_info.insert(name.into(), info);
        self
    }

    /// `model` with the selected variables set from the checkpoint; errors name the
    /// checkpoint and the variable (missing, or of another shape, with both shapes).
    pub fn apply<B: Backend, M: Module<B>>(&self, model: M) -> Result<M> {
        let (path, checkpoint) = self.source()?;
        let stored = StoredWeights::of(&path, &checkpoint)?;
        let untrained = untrained_values(&model);
        let any = self.vars_to_warm_start.takes_untrained();
        let mut current: BTreeMap<String, (Vec<usize>, Vec<f32>)> = parameter_values(&model)
            .into_iter()
            .filter(|(name, _)| any || !untrained.contains_key(name))
            .collect();
        let selected = self.selected(
            current
                .iter()
                .map(|(n, (shape, _))| (n.clone(), shape.clone())),
        )?;
        if selected.is_empty() {
            return Err(Error::Config(format!(
                "warm start from {}: {:?} selects no {} of the model",
                path.display(),
                self.vars_to_warm_start,
                if any {
                    "variable"
                } else {
                    "trainable variable"
                }
            )));
        }
        if let Some(unused) = (self.var_name_to_vocab_info.keys())
            .find(|name| !selected.iter().any(|(s, _)| s == *name))
        {
            return Err(Error::Config(format!(
                "warm start: '{unused}' has vocabulary info but is not a variable the warm \
                 start selects"
            )));
        }
        let mut values = BTreeMap::new();
        for (name, shape) in selected {
            let prev = self
                .var_name_to_prev_var_name
                .get(&name)
                .cloned()
                .unwrap_or_else(|| name.clone());
            let previous = stored.value(&prev)?.ok_or_else(|| {
                Error::checkpoint(
                    &path,
                    format!(
                        "warm start: variable '{prev}' (for the model's '{name}') is not in it"
                    ),
                )
            })?;
            let value = match self.var_name_to_vocab_info.get(&name) {
                Some(info) => {
                    let (_, initial) = current.remove(&name).unwrap_or_default();
                    info.remap(&name, &previous, &shape, &initial)?
                }
                None if previous.shape != shape => {
                    return Err(Error::checkpoint(
                        &path,
                        format!(
                            "warm start: variable '{prev}' has shape {:?}, the model's '{name}' \
                             {:?}",
                            previous.shape, shape
                        ),
                    ))
                }
                None => previous.values,
            };
            values.insert(name, value);
        }
        let count = values.len();
        let model = load_values(model, &mut values)?;
        tracing::info!(
            "warm-started {count} variable(s) from {} (global_step {})",
            path.display(),
            checkpoint.global_step
        );
        Ok(model)
    }

    /// The checkpoint to read: the file, or the latest checkpoint of the model directory.
    fn source(&self) -> Result<(PathBuf, Checkpoint)> {
        let from = &self.ckpt_to_initialize_from;
        read_checkpoint(from)?.ok_or_else(|| {
            Error::Config(format!(
                "warm start: {} holds no checkpoint",
                from.display()
            ))
        })
    }

    /// The variables (name, shape) of `candidates` the settings select.
    fn selected(
        &self,
        candidates: impl Iterator<Item = (String, Vec<usize>)>,
    ) -> Result<Vec<(String, Vec<usize>)>> {
        let all: Vec<(String, Vec<usize>)> = candidates.collect();
        match &self.vars_to_warm_start {
            VarsToWarmStart::All => {}
            VarsToWarmStart::Regex(pattern) => {
                if let Err(e) = regex::Regex::new(&format!("^(?:{pattern})")) {
                    return Err(Error::Config(format!(
                        "warm start: vars_to_warm_start '{pattern}': {e}"
                    )));
                }
            }
            VarsToWarmStart::List(names) => {
                if let Some(unknown) = names.iter().find(|n| !all.iter().any(|(a, _)| a == *n)) {
                    let known: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(Error::Config(format!(
                        "warm start: '{unknown}' is not a variable of the model ({})",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(all
            .into_iter()
            .filter(|(name, _)| self.vars_to_warm_start.selects(name))
            .collect())
    }
}

#[cfg(test)]
mod tests;
