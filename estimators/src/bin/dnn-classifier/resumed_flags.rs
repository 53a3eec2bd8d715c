//! The `train` flags against the model a directory already holds: those that shape the
//! saved variables (hidden units, optimizer, batch normalisation) must agree with it, as
//! restoring TF's checkpoint into another graph fails; those that do not (learning rate,
//! dropout) replace the saved values, saying so, as TF's model function would.

use std::path::Path;

use anyhow::{bail, Result};
use clap::ValueEnum;
use estimator::Estimator;
use estimators::DnnClassifier;

use crate::train_args::TrainArgs;

/// `saved` (the model in `model_dir`) with the flags of `args` that may change on resume;
/// an error naming the flag and both values when one that may not change differs.
pub fn apply_to_resumed(
    args: &TrainArgs,
    saved: DnnClassifier,
    model_dir: &Path,
) -> Result<DnnClassifier> {
    let dnn = saved.network();
    let differs = |flag: &str, given: String, kept: String| {
        anyhow::anyhow!(
            "{flag} {given}, but the model in {} was trained with {kept}: resuming keeps its \
             variables, which {flag} would change; leave the flag out, or give another \
             --model-dir",
            model_dir.display()
        )
    };
    if let Some(units) = &args.hidden_units {
        if *units != dnn.hidden_units {
            bail!(differs(
                "--hidden-units",
                list(units),
                list(&dnn.hidden_units)
            ));
        }
    }
    let spec = saved.optimizer();
    if let Some(name) = args.optimizer {
        let given = name.to_possible_value().map(|v| v.get_name().to_string());
        let kept = spec.algorithm.kind();
        if given.as_deref() != Some(kept) {
            bail!(differs(
                "--optimizer",
                given.unwrap_or_default(),
                kept.into()
            ));
        }
    }
    if args.batch_norm && !dnn.batch_norm {
        bail!(differs("--batch-norm", "on".into(), "none".into()));
    }
    let kept_dropout = dnn.dropout.unwrap_or(0.0);
    let mut classifier = saved;
    if let Some(rate) = args.learning_rate {
        if rate != spec.learning_rate {
            tracing::warn!(
                "--learning-rate {rate} replaces the saved model's {}",
                spec.learning_rate
            );
            let mut spec = spec;
            spec.learning_rate = rate;
            classifier = classifier.with_optimizer(spec);
        }
    }
    if let Some(p) = args.dropout {
        if p != kept_dropout {
            tracing::warn!("--dropout {p} replaces the saved model's {kept_dropout}");
            classifier = classifier.with_dropout(p)?;
        }
    }
    Ok(classifier)
}

fn list(units: &[usize]) -> String {
    units
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
