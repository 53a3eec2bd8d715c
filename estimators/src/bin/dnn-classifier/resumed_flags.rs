//! The `train` flags against the model a directory already holds: those that shape the
//! saved variables, give the labels their meaning or say how the files are read (hidden
//! units, activation, optimizer, batch normalisation, standardised inputs, classes, label
//! vocabulary and column, feature vocabularies and embeddings, weight column, schema) must
//! agree with it, as restoring TF's checkpoint into another graph fails; those that do not
//! (learning rate, dropout, evaluation thresholds, loss reduction) replace the saved values,
//! as TF's model function would.

use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use estimator::datasets::{Column, Schema};
use estimator::head::Head;
use estimator::Estimator;
use estimators::feature_column::{
    categorical_column_with_vocabulary_file, CategoricalColumn, EmbeddingColumn, FeatureColumn,
    IndicatorColumn, VocabularyListColumn,
};
use estimators::{Activation, DnnClassifier};

use crate::input::read_schema;
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
            "{flag} {given}, but the model in {} was trained with {kept}: resuming keeps the \
             model as it was trained, which {flag} would change; leave the flag out, or give \
             another --model-dir",
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
    if let Some(activation) = args.activation_fn {
        if activation != dnn.activation {
            bail!(differs(
                "--activation-fn",
                name_of(activation),
                name_of(dnn.activation)
            ));
        }
    }
    if args.batch_norm && !dnn.batch_norm {
        bail!(differs("--batch-norm", "on".into(), "none".into()));
    }
    let standardised = dnn.columns.columns().iter().any(
        |column| matches!(column, FeatureColumn::Numeric(numeric) if numeric.normalizer.is_some()),
    );
    if args.no_normalize && standardised {
        bail!(differs(
            "--no-normalize",
            "on".into(),
            "its numeric columns standardised".into()
        ));
    }
    if let Some(n) = args.n_classes {
        if n != saved.n_classes() {
            bail!(differs(
                "--n-classes",
                n.to_string(),
                saved.n_classes().to_string()
            ));
        }
    }
    // Labels mean what they meant: another vocabulary or label column would train the saved
    // logits on classes renumbered or on another column.
    if let Some(given) = &args.label_vocabulary {
        let kept = match saved.head() {
            Head::Binary(head) => head.label_vocabulary.as_ref(),
            Head::MultiClass(head) => head.label_vocabulary.as_ref(),
            Head::Regression(_) => None,
        };
        if Some(given) != kept {
            let kept = kept.map_or("no label vocabulary".into(), |v| v.join(","));
            bail!(differs("--label-vocabulary", given.join(","), kept));
        }
    }
    // Each categorical input's column, and how it feeds the network: its width as an
    // embedding, or none (a one-hot indicator).
    let categories: Vec<(&VocabularyListColumn, Option<usize>)> = (dnn.columns.columns().iter())
        .filter_map(|column| match column {
            FeatureColumn::Indicator(IndicatorColumn {
                categorical: CategoricalColumn::VocabularyList(lookup),
            }) => Some((lookup, None)),
            FeatureColumn::Embedding(EmbeddingColumn {
                categorical: CategoricalColumn::VocabularyList(lookup),
                dimension,
                ..
            }) => Some((lookup, Some(*dimension))),
            _ => None,
        })
        .collect();
    let category = |name: &str| categories.iter().find(|(lookup, _)| lookup.key == name);
    for (name, width) in &args.embedding_dimension {
        let kept = category(name).map(|(_, kept)| *kept);
        if kept != Some(Some(*width)) {
            let kept = match kept {
                Some(Some(kept)) => format!("{name} embedded in {kept} values"),
                Some(None) => format!("{name} as a one-hot indicator"),
                None => format!("no categorical column {name}"),
            };
            bail!(differs(
                "--embedding-dimension",
                format!("{name}={width}"),
                kept
            ));
        }
    }
    for (name, path) in &args.vocabulary_file {
        let given = categorical_column_with_vocabulary_file(name, path, None)
            .with_context(|| format!("--vocabulary-file {name}"))?
            .vocabulary;
        let kept = category(name).map(|(lookup, _)| &lookup.vocabulary);
        if kept != Some(&given) {
            let given = format!("{name}={} ({})", path.display(), values(&given));
            let kept = kept.map_or(format!("no vocabulary for {name}"), |kept| {
                format!("{name} as {}", values(kept))
            });
            bail!(differs("--vocabulary-file", given, kept));
        }
    }
    if let Some(given) = &args.weight_column {
        let kept = saved.weight_column().map(|w| w.name.as_str());
        if kept != Some(given.as_str()) {
            let kept = kept.map_or("no weight column".into(), |name| name.to_string());
            bail!(differs("--weight-column", given.clone(), kept));
        }
    }
    if let (Some(given), Some(kept)) = (&args.label_column, saved.schema().label_column()) {
        if *given != kept.name {
            bail!(differs("--label-column", given.clone(), kept.name.clone()));
        }
    }
    // The saved schema reads the files; another one given would be silently ignored.
    if let (Some(path), Some(label)) = (&args.schema, saved.schema().label.clone()) {
        let given = read_schema(path)?.label(label);
        if let Some((given, kept)) = first_difference(&given, saved.schema()) {
            bail!(differs(
                "--schema",
                format!("{} ({given})", path.display()),
                kept
            ));
        }
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
    if let Some(thresholds) = &args.thresholds {
        classifier = crate::classifier::with_thresholds(classifier, thresholds)?;
    }
    if let Some(reduction) = args.loss_reduction {
        classifier = classifier.with_loss_reduction(reduction.into());
    }
    Ok(classifier)
}

/// What `given` and `kept` each say at the first column where they differ, or `None` when they
/// lay the columns out alike (class counts aside: the model's schema adds its own).
fn first_difference(given: &Schema, kept: &Schema) -> Option<(String, String)> {
    let describe = |column: Option<&Column>| match column {
        None => "no such column".to_string(),
        Some(column) => match &column.default {
            None => format!("{} as {:?}", column.name, column.kind),
            Some(default) => format!("{} as {:?}, default '{default}'", column.name, column.kind),
        },
    };
    let n = given.columns.len().max(kept.columns.len());
    (0..n)
        .map(|i| (i, given.columns.get(i), kept.columns.get(i)))
        .find(|(_, given, kept)| given != kept)
        .map(|(i, given, kept)| {
            let at = format!("column {}: ", i + 1);
            (at.clone() + &describe(given), at + &describe(kept))
        })
}

/// TF's name of `activation`, as the flag takes it.
fn name_of(activation: Activation) -> String {
    serde_json::to_value(activation)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// How many values a vocabulary holds, and its first few.
fn values(vocabulary: &[String]) -> String {
    let first: Vec<&str> = vocabulary.iter().take(4).map(String::as_str).collect();
    let more = if vocabulary.len() > 4 { ", …" } else { "" };
    format!("{} values: {}{more}", vocabulary.len(), first.join(", "))
}

fn list(units: &[usize]) -> String {
    units
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
