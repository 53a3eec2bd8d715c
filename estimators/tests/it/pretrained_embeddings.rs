//! Embedding tables that training leaves alone (`with_trainable(false)`): pretrained vectors
//! warm-started by name into a frozen table keep their values through training, a resume,
//! two replicas and an export, while the layers above them learn.

use std::path::Path;

use estimator::datasets::{DatasetExt, Example, Schema};
use estimator::distribute::Strategy;
use estimator::{EstimatorExt, OptimizerSpec, TrainSpec, VarsToWarmStart, WarmStartSettings};
use estimators::feature_column::{
    categorical_column_with_vocabulary_list, embedding_column, numeric_column, EmbeddingColumn,
    EmbeddingInitializer, FeatureColumn,
};
use estimators::DnnClassifier;

use crate::canned::{classes, exercise, repeated, run_config};

const TABLE: &str = "input.embeddings.0.weight";

fn columns(vocabulary: [&str; 3], trainable: bool) -> Vec<FeatureColumn> {
    with_table(vocabulary, |table| table.with_trainable(trainable))
}

/// The numbers and the colour's embedding, with the table set by `table`.
fn with_table(
    vocabulary: [&str; 3],
    table: impl Fn(EmbeddingColumn) -> EmbeddingColumn,
) -> Vec<FeatureColumn> {
    let colour = categorical_column_with_vocabulary_list("colour", vocabulary);
    vec![
        numeric_column("x1").into(),
        numeric_column("x2").into(),
        table(embedding_column(colour, 2)).into(),
    ]
}

/// A table that starts at `value` everywhere and does not train.
fn frozen_at(value: f64) -> impl Fn(EmbeddingColumn) -> EmbeddingColumn {
    let initializer = EmbeddingInitializer::Constant { value };
    move |table| table.with_initializer(initializer).with_trainable(false)
}

fn classifier(model: &Path, schema: &Schema, columns: Vec<FeatureColumn>) -> DnnClassifier {
    DnnClassifier::new(run_config(model), schema, columns, [8], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.05))
}

fn train(est: &DnnClassifier, data: &[Example], steps: u64) {
    let data = data.to_vec();
    est.train(move || Ok(repeated(&data)), TrainSpec::max_steps(steps))
        .unwrap();
}

fn value(est: &DnnClassifier, name: &str) -> Vec<f32> {
    est.variable_value(name).unwrap().values
}

#[test]
fn a_pretrained_table_warm_started_by_name_stays_frozen_while_the_rest_learns() {
    let (schema, data) = classes();
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let pretrained = classifier(&source, &schema, columns(["red", "green", "blue"], true));
    train(&pretrained, &data, 20);

    // The new model lists its categories in another order: its rows follow them by name.
    let fresh = classifier(&target, &schema, columns(["blue", "red", "green"], false));
    let names = VarsToWarmStart::List(vec![TABLE.into()]);
    let settings = WarmStartSettings::new(&source).with_vars(names);
    let settings = fresh.warm_start_following(&pretrained, &settings);
    assert!(settings.var_name_to_vocab_info.contains_key(TABLE));
    let frozen = fresh.with_run_config(run_config(&target).with_warm_start_from(settings));
    train(&frozen, &data, 20);
    let first_hidden = value(&frozen, "hidden.0.weight");
    // Rows: blue, red, green, then the out-of-vocabulary row; before: red, green, blue, OOV.
    let rows =
        |values: Vec<f32>| -> Vec<Vec<f32>> { values.chunks(2).map(<[f32]>::to_vec).collect() };
    let (before, after) = (rows(value(&pretrained, TABLE)), rows(value(&frozen, TABLE)));
    let followed = [2, 0, 1, 3].map(|row| before[row].clone());
    assert_eq!(after, followed);

    // Resumed from its checkpoint, it trains on and the table stays as it was loaded.
    train(&frozen, &data, 40);
    assert_eq!(rows(value(&frozen, TABLE)), after);
    assert_ne!(value(&frozen, "hidden.0.weight"), first_hidden);
}

#[test]
fn a_pattern_leaves_a_frozen_table_as_its_initializer_drew_it() {
    let (schema, data) = classes();
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let pretrained = classifier(&source, &schema, columns(["red", "green", "blue"], true));
    train(&pretrained, &data, 10);

    // As TF's `vars_to_warm_start=".*"`: every trainable variable, so not the frozen table.
    let frozen_columns = with_table(["blue", "red", "green"], frozen_at(0.0));
    let fresh = classifier(&target, &schema, frozen_columns);
    let settings = fresh.warm_start_following(&pretrained, &WarmStartSettings::new(&source));
    assert!(!settings.var_name_to_vocab_info.contains_key(TABLE));
    let warmed = fresh.with_run_config(run_config(&target).with_warm_start_from(settings));
    exercise(&warmed, &data, &["accuracy"]);
    assert!(value(&warmed, TABLE).iter().all(|v| *v == 0.0));
}

#[test]
fn a_frozen_table_on_two_replicas_stays_as_one_process_leaves_it() {
    let (schema, data) = classes();
    let dirs = [(); 2].map(|_| tempfile::tempdir().unwrap());
    let input = |batch| {
        let data = data.clone();
        move || {
            Ok(estimator::datasets::from_vec(data)
                .repeat(None)
                .batch_columnar(batch, false))
        }
    };
    let model = |dir: &Path| {
        let config = run_config(dir).with_peer_timeout_secs(20);
        let columns = with_table(["red", "green", "blue"], frozen_at(0.5));
        DnnClassifier::new(config, &schema, columns, [8], 3)
            .unwrap()
            .with_optimizer(OptimizerSpec::adam(0.05))
    };
    let (replicated, single) = (model(dirs[0].path()), model(dirs[1].path()));
    let mirrored = Strategy::Mirrored { replicas: 2 };
    (replicated.train_with(input(8), TrainSpec::max_steps(20), mirrored)).unwrap();
    single.train(input(16), TrainSpec::max_steps(20)).unwrap();
    for name in single.variable_names().unwrap() {
        let [a, b] = [&replicated, &single].map(|m| value(m, &name));
        let diff = (a.iter().zip(&b))
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(diff <= 1e-5, "{name}: max |replicas - single| = {diff}");
    }
    assert!(value(&replicated, TABLE).iter().all(|v| *v == 0.5));
}
