//! A warm start from a `dnn-classifier` model trained on other data: the first layer's rows
//! follow the names of the inputs (categories added or reordered, columns added) and the
//! logits' columns the class names, rather than their positions
//! ([`CannedEstimator::warm_start_following`](estimators::CannedEstimator::warm_start_following)).

use std::path::Path;

use anyhow::{Context, Result};
use estimator::Estimator;
use estimators::DnnClassifier;

use crate::classifier::MODEL_FILE;

/// `classifier`, whose warm start (if any) now knows how the model it starts from laid out
/// its inputs and classes, where they differ from its own: read from that model's
/// directory. A warm start from elsewhere than a `dnn-classifier` model stays as it was.
pub fn follow_layout(classifier: DnnClassifier) -> Result<DnnClassifier> {
    let Some(settings) = classifier.run_config().warm_start_from.clone() else {
        return Ok(classifier);
    };
    let from = &settings.ckpt_to_initialize_from;
    let dir = match from.is_dir() {
        true => from.as_path(),
        false => from.parent().unwrap_or(Path::new(".")),
    };
    let file = dir.join(MODEL_FILE);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(classifier);
    };
    let previous: DnnClassifier =
        serde_json::from_str(&text).with_context(|| format!("{}: corrupt", file.display()))?;
    let settings = classifier.warm_start_following(&previous, &settings);
    let run_config = classifier
        .run_config()
        .clone()
        .with_warm_start_from(settings);
    Ok(classifier.with_run_config(run_config))
}
