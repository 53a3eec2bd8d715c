//! A warm start from a model trained on other data: the first layer's rows follow the names
//! of the inputs (categories added or reordered, columns added) and the logits' columns the
//! class names, rather than their positions.

use std::path::Path;

use anyhow::{Context, Result};
use estimator::checkpoint::VocabInfo;
use estimator::head::Head;
use estimator::{Estimator, WarmStartSettings};
use estimators::DnnClassifier;

use crate::classifier::MODEL_FILE;

/// The first hidden layer's weight: one row per value of the dense input.
const FIRST_LAYER: &str = "hidden.0.weight";

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
    let settings = with_layout(settings, &classifier, &previous);
    let run_config = classifier
        .run_config()
        .clone()
        .with_warm_start_from(settings);
    Ok(classifier.with_run_config(run_config))
}

fn with_layout(
    mut settings: WarmStartSettings,
    model: &DnnClassifier,
    previous: &DnnClassifier,
) -> WarmStartSettings {
    let selects = |settings: &WarmStartSettings, name: &str| {
        settings.vars_to_warm_start.selects(name)
            && !settings.var_name_to_prev_var_name.contains_key(name)
    };
    let inputs = model.network().columns.dense_input_names();
    let before = previous.network().columns.dense_input_names();
    if inputs != before && selects(&settings, FIRST_LAYER) {
        let kept = inputs.iter().filter(|name| before.contains(name)).count();
        tracing::info!(
            "warm start: the first layer's {} input(s) take the rows of the same input of \
             the model warmed from ({kept} found there)",
            inputs.len()
        );
        settings = settings.with_vocab_info(FIRST_LAYER, VocabInfo::new(inputs, before));
    }
    if let (Some(classes), Some(before)) = (class_names(model.head()), class_names(previous.head()))
    {
        if classes != before {
            tracing::info!("warm start: the logits follow the class names {classes:?}");
            let info = VocabInfo::new(classes, before);
            if selects(&settings, "logits.weight") {
                settings = settings.with_vocab_info("logits.weight", info.clone().with_axis(1));
            }
            if selects(&settings, "logits.bias") {
                settings = settings.with_vocab_info("logits.bias", info);
            }
        }
    }
    settings
}

/// The class names of a head with one logit per class.
fn class_names(head: &Head) -> Option<Vec<String>> {
    match head {
        Head::MultiClass(head) => Some(
            head.label_vocabulary
                .clone()
                .unwrap_or_else(|| (0..head.n_classes).map(|i| i.to_string()).collect()),
        ),
        Head::Binary(_) | Head::Regression(_) => None,
    }
}
