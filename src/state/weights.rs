//! Saving a module's weights to safetensors bytes and loading them back with validation.

use std::collections::HashMap;
use std::path::Path;

use burn::module::Module;
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::backend::Backend;

use crate::error::{Error, Result};

/// The module's parameters as a safetensors file, named by dotted path (`layer1.weight`).
///
/// With `metadata` empty the bytes are a pure function of the weights, which is what makes
/// checkpoints of two runs with the same seed byte-identical.
pub fn weights_to_safetensors<B: Backend, M: Module<B>>(
    model: &M,
    metadata: &[(&str, &str)],
) -> Result<Vec<u8>> {
    let mut store = SafetensorsStore::from_bytes(None).clear_metadata();
    for (key, value) in metadata {
        store = store.metadata(*key, *value);
    }
    let failed = |e: String| Error::Config(format!("cannot serialise model weights: {e}"));
    model
        .save_into(&mut store)
        .map_err(|e| failed(e.to_string()))?;
    store.get_bytes().map_err(|e| failed(e.to_string()))
}

/// Loads safetensors `bytes` into `model`; every tensor must be present with the same shape.
///
/// `source` names the file in errors, e.g. "ckpt-200.ckpt: tensor 'layer1.weight' has shape
/// [4, 16] but the model expects [4, 32]".
pub fn load_weights<B: Backend, M: Module<B>>(
    mut model: M,
    bytes: Vec<u8>,
    source: &Path,
) -> Result<M> {
    let expected: HashMap<String, Vec<usize>> = model
        .collect(None, None, false)
        .into_iter()
        .map(|s| (s.full_path(), s.shape.to_vec()))
        .collect();
    let found = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
        Error::checkpoint(source, format!("weights are not valid safetensors: {e}"))
    })?;
    let mut names: Vec<&str> = expected.keys().map(String::as_str).collect();
    names.sort_unstable();
    for name in names {
        let view = found.tensor(name).map_err(|_| {
            Error::checkpoint(source, format!("tensor '{name}' is missing (model has it)"))
        })?;
        let want = &expected[name];
        if view.shape() != want.as_slice() {
            return Err(Error::checkpoint(
                source,
                format!(
                    "tensor '{name}' has shape {:?} but the model expects {:?}",
                    view.shape(),
                    want
                ),
            ));
        }
    }
    let mut extra: Vec<String> = found
        .names()
        .into_iter()
        .filter(|n| !expected.contains_key(*n))
        .map(str::to_string)
        .collect();
    if !extra.is_empty() {
        extra.sort();
        return Err(Error::checkpoint(
            source,
            format!(
                "tensor '{}' is not in the model (different architecture?)",
                extra[0]
            ),
        ));
    }
    let mut store = SafetensorsStore::from_bytes(Some(bytes));
    let result = model
        .load_from(&mut store)
        .map_err(|e| Error::checkpoint(source, format!("cannot load weights: {e}")))?;
    if let Some(error) = result.errors.first() {
        return Err(Error::checkpoint(source, error.to_string()));
    }
    Ok(model)
}
