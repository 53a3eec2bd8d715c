//! The canned estimators end to end: train, evaluate, predict, export and reload each on
//! tiny data (their accuracy against TF's is in `canned_accuracy.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use estimator::datasets::{from_vec, ColumnarBatch, DatasetExt, Example, Label, Schema};
use estimator::head::{HeadPrediction, RegressionLoss};
use estimator::{
    Estimator, EstimatorExt, OptimizerSpec, Predictor, RunConfig, TrainSpec, WarmStartSettings,
};
use estimators::feature_column::{
    bucketized_column, categorical_column_with_hash_bucket,
    categorical_column_with_vocabulary_list, crossed_column, embedding_column, indicator_column,
    numeric_column, CrossSource, FeatureColumn,
};
use estimators::{
    Activation, BaselineClassifier, BaselineRegressor, DnnClassifier, DnnLinearCombinedClassifier,
    DnnLinearCombinedRegressor, DnnRegressor, LinearClassifier, LinearRegressor,
};

const COLOURS: [&str; 4] = ["red", "green", "blue", "mauve"];

pub(crate) fn run_config(dir: &Path) -> RunConfig {
    RunConfig::new(dir)
        .with_save_checkpoints_steps(20)
        .with_save_summary_steps(20)
        .with_log_step_count_steps(1000)
        .with_progress(false)
}

/// `n` examples with two numbers, a colour (one not in the vocabularies) and a weight,
/// labelled by `label(x1, x2, colour index)`.
pub(crate) fn examples(n: usize, label: impl Fn(f32, f32, usize) -> Label) -> Vec<Example> {
    let mut state = 2024u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as f32 / (1u64 << 31) as f32
    };
    (0..n)
        .map(|_| {
            let (x1, x2) = (next() * 4.0 - 2.0, next() * 4.0 - 2.0);
            let colour = ((next() * 4.0) as usize).min(3);
            Example {
                dense: vec![x1, x2, 0.5 + next()],
                categorical: vec![COLOURS[colour].to_string()],
                label: label(x1, x2, colour),
            }
        })
        .collect()
}

pub(crate) fn schema(label_column: Schema) -> Schema {
    let mut schema = Schema::new()
        .float("x1")
        .float("x2")
        .category("colour")
        .float("w");
    schema.columns.extend(label_column.columns);
    schema.label = label_column.label;
    schema
}

/// Three classes: the largest of x1, x2 and a colour bonus.
pub(crate) fn classes() -> (Schema, Vec<Example>) {
    let data = examples(240, |x1, x2, colour| {
        let scores = [x1, x2, if colour == 2 { 1.5 } else { -1.0 }];
        Label::Class(
            (0..3)
                .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
                .unwrap() as u32,
        )
    });
    (schema(Schema::new().int("label").label("label")), data)
}

/// Two named classes: "yes" when x1 + x2 > 0.
pub(crate) fn answers() -> (Schema, Vec<Example>) {
    let data = examples(240, |x1, x2, _| {
        Label::Name(if x1 + x2 > 0.0 { "yes" } else { "no" }.into())
    });
    (
        schema(Schema::new().category("answer").label("answer")),
        data,
    )
}

/// A number: 2 x1 - x2, plus 1 for red.
pub(crate) fn targets() -> (Schema, Vec<Example>) {
    let data = examples(240, |x1, x2, colour| {
        Label::Float(2.0 * x1 - x2 + if colour == 0 { 1.0 } else { 0.0 })
    });
    (schema(Schema::new().float("target").label("target")), data)
}

/// A DNN classifier of [`answers`], its classes named.
pub(crate) fn answers_classifier(dir: &Path, schema: &Schema) -> DnnClassifier {
    DnnClassifier::new(run_config(dir), schema, dnn_columns(), [8], 2)
        .unwrap()
        .with_label_vocabulary(["no", "yes"])
        .unwrap()
}

/// What `est` predicts for the first of `data`.
fn first_prediction<E>(est: &E, data: &[Example]) -> HeadPrediction
where
    E: Estimator<Batch = ColumnarBatch, Prediction = HeadPrediction>,
{
    let first = || Ok(from_vec(data[..1].to_vec()).batch_columnar(1, false));
    est.predict(first, None).unwrap().next().unwrap().unwrap()
}

fn colour() -> estimators::feature_column::VocabularyListColumn {
    categorical_column_with_vocabulary_list("colour", ["red", "green", "blue"])
}

pub(crate) fn dnn_columns() -> Vec<FeatureColumn> {
    vec![
        numeric_column("x1").into(),
        numeric_column("x2").into(),
        indicator_column(colour()).into(),
        embedding_column(categorical_column_with_hash_bucket("colour", 16), 3).into(),
    ]
}

fn linear_columns() -> Vec<FeatureColumn> {
    let x1_buckets = bucketized_column(numeric_column("x1"), [-1.0, 0.0, 1.0]);
    vec![
        numeric_column("x1").into(),
        numeric_column("x2").into(),
        x1_buckets.clone().into(),
        colour().into(),
        crossed_column([CrossSource::from("colour"), x1_buckets.into()], 64).into(),
    ]
}

/// Trains `est` 40 steps, evaluates (every name of `expected` must be a metric), predicts,
/// exports, reloads the export and checks it predicts identically. Returns the metrics.
pub(crate) fn exercise<E>(est: &E, data: &[Example], expected: &[&str]) -> BTreeMap<String, f64>
where
    E: Estimator<Batch = ColumnarBatch, Prediction = HeadPrediction>,
{
    let train = || {
        Ok::<_, estimator::datasets::Error>(
            from_vec(data.to_vec())
                .shuffle(64, 1)
                .repeat(None)
                .batch_columnar(16, false),
        )
    };
    let outcome = est.train(train, TrainSpec::max_steps(40)).unwrap();
    assert_eq!(outcome.global_step, 40);
    assert!(outcome.last_loss.unwrap().is_finite());

    let eval =
        || Ok::<_, estimator::datasets::Error>(from_vec(data.to_vec()).batch_columnar(50, false));
    let metrics = est.evaluate(eval, None, None, None).unwrap();
    for name in expected.iter().chain(&["loss", "global_step"]) {
        assert!(
            metrics.contains_key(*name),
            "no metric '{name}' in {metrics:?}"
        );
    }
    assert_eq!(metrics["global_step"], 40.0);

    let predictions: Vec<HeadPrediction> = est
        .predict(eval, None)
        .unwrap()
        .take(10)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(predictions.len(), 10);

    let export_dir = est
        .export(&est.run_config().model_dir.join("export"))
        .unwrap();
    let predictor = Predictor::<E>::load(&export_dir).unwrap();
    assert_eq!(predictor.signature(), &est.serving_signature());
    assert_eq!(
        predictor
            .predict(&ColumnarBatch::from_examples(&data[..10]).unwrap())
            .unwrap(),
        predictions
    );
    metrics
}

const CLASSIFIER_METRICS: &[&str] = &["accuracy", "average_loss"];
pub(crate) const BINARY_METRICS: &[&str] =
    &["accuracy", "average_loss", "auc", "precision", "recall"];
const REGRESSOR_METRICS: &[&str] = &["average_loss", "label/mean"];

#[test]
fn dnn_classifier_with_every_option() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = classes();
    let est = DnnClassifier::new(run_config(dir.path()), &schema, dnn_columns(), [16, 8], 3)
        .unwrap()
        .with_weight_column("w")
        .unwrap()
        .with_activation(Activation::Elu)
        .with_dropout(0.1)
        .unwrap()
        .with_batch_norm(true)
        .with_optimizer(OptimizerSpec::adam(0.01));
    let metrics = exercise(&est, &data, CLASSIFIER_METRICS);
    assert!(metrics["accuracy"] > 0.5, "{metrics:?}");
}

#[test]
fn dnn_classifier_with_a_label_vocabulary_predicts_class_names() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = answers();
    let est = answers_classifier(dir.path(), &schema);
    exercise(&est, &data, BINARY_METRICS);
    let p = first_prediction(&est, &data);
    assert_eq!(
        p.all_classes,
        Some(vec!["no".to_string(), "yes".to_string()])
    );
    assert!(matches!(p.classes.as_deref(), Some([c]) if c == "no" || c == "yes"));
}

#[test]
fn dnn_regressor() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = targets();
    let est = DnnRegressor::new(run_config(dir.path()), &schema, dnn_columns(), [16]).unwrap();
    exercise(&est, &data, REGRESSOR_METRICS);
}

#[test]
fn linear_classifier_learns_from_buckets_vocabularies_and_crosses() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = classes();
    let est = LinearClassifier::new(run_config(dir.path()), &schema, linear_columns(), 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adagrad(0.3));
    let metrics = exercise(&est, &data, CLASSIFIER_METRICS);
    assert!(metrics["accuracy"] > 0.6, "{metrics:?}");
}

#[test]
fn linear_binary_classifier_with_weights() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = answers();
    let est = LinearClassifier::new(run_config(dir.path()), &schema, linear_columns(), 2)
        .unwrap()
        .with_label_vocabulary(["no", "yes"])
        .unwrap()
        .with_weight_column("w")
        .unwrap();
    let metrics = exercise(&est, &data, BINARY_METRICS);
    assert!(metrics["auc"] > 0.8, "{metrics:?}");
}

#[test]
fn linear_regressor_reduces_the_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = targets();
    let est = LinearRegressor::new(run_config(dir.path()), &schema, linear_columns())
        .unwrap()
        .with_optimizer(OptimizerSpec::adagrad(0.3));
    let metrics = exercise(&est, &data, REGRESSOR_METRICS);
    // Predicting 0 everywhere would cost E[target^2] ≈ 5.
    assert!(metrics["average_loss"] < 2.0, "{metrics:?}");
}

#[test]
fn wide_and_deep_classifier_and_regressor() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = classes();
    let est = DnnLinearCombinedClassifier::new(
        run_config(&dir.path().join("classifier")),
        &schema,
        linear_columns(),
        dnn_columns(),
        [8],
        3,
    )
    .unwrap()
    .with_dropout(0.1)
    .unwrap();
    exercise(&est, &data, CLASSIFIER_METRICS);
    let (schema, data) = targets();
    let est = DnnLinearCombinedRegressor::new(
        run_config(&dir.path().join("regressor")),
        &schema,
        linear_columns(),
        dnn_columns(),
        [8],
    )
    .unwrap();
    exercise(&est, &data, REGRESSOR_METRICS);
}

#[test]
fn baseline_classifier_learns_the_class_priors() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = classes();
    let est = BaselineClassifier::new(run_config(dir.path()), &schema, 3).unwrap();
    exercise(&est, &data, CLASSIFIER_METRICS);
    assert!(est.serving_signature().inputs.is_empty());
    let mut priors = [0.0f32; 3];
    for e in &data {
        priors[e.label.class().unwrap() as usize] += 1.0 / data.len() as f32;
    }
    let probabilities = first_prediction(&est, &data).probabilities.unwrap();
    for (p, prior) in probabilities.iter().zip(priors) {
        assert!(
            (p - prior).abs() < 0.1,
            "{probabilities:?} vs priors {priors:?}"
        );
    }
}

#[test]
fn baseline_regressor_learns_the_mean() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = targets();
    let est = BaselineRegressor::new(run_config(dir.path()), &schema);
    let metrics = exercise(&est, &data, REGRESSOR_METRICS);
    assert!(metrics["average_loss"].is_finite());
}

#[test]
fn bad_configurations_are_errors_naming_what_is_wrong() {
    let (schema, _) = classes();
    let err = DnnClassifier::new(
        RunConfig::new("unused"),
        &schema,
        vec![numeric_column("petal_width").into()],
        [4],
        3,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "feature column 'petal_width' is not in the input (columns: x1, x2, colour, w)"
        ),
        "{err}"
    );
    let err = LinearClassifier::new(RunConfig::new("unused"), &schema, linear_columns(), 3)
        .unwrap()
        .with_weight_column("colour")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("weight column 'colour' must be numeric"),
        "{err}"
    );
    assert!(DnnClassifier::new(RunConfig::new("unused"), &schema, dnn_columns(), [], 3).is_err());
}

#[test]
fn a_label_outside_the_vocabulary_fails_training_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, data) = answers();
    let est = LinearClassifier::new(run_config(dir.path()), &schema, linear_columns(), 2)
        .unwrap()
        .with_label_vocabulary(["no", "maybe"])
        .unwrap();
    let err = est
        .train(
            || Ok(from_vec(data.clone()).batch_columnar(16, false)),
            TrainSpec::max_steps(2),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("'yes'"), "{err}");
}

#[test]
fn a_poisson_regressor_predicts_expected_counts() {
    // Counts whose mean is e^(0.5 + 0.4 x1): from 0.6 to 3.7.
    let data = examples(240, |x1, _, _| Label::Float((0.5 + 0.4 * x1).exp().round()));
    let schema = schema(Schema::new().float("target").label("target"));
    let dir = tempfile::tempdir().unwrap();
    let est = DnnRegressor::new(run_config(dir.path()), &schema, dnn_columns(), [8])
        .unwrap()
        .with_regression_loss(RegressionLoss::Poisson)
        .with_optimizer(OptimizerSpec::adam(0.05));
    let metrics = exercise(&est, &data, REGRESSOR_METRICS);
    // Every prediction is the exponential of its logit, a count's expectation.
    let p = first_prediction(&est, &data);
    let (logit, count) = (p.logits[0], p.predictions.unwrap()[0]);
    assert!(
        (count - logit.exp()).abs() < 1e-5 * count.max(1.0),
        "{logit} {count}"
    );
    let mean = data
        .iter()
        .map(|e| e.label.as_f32().unwrap() as f64)
        .sum::<f64>()
        / 240.0;
    assert!(
        (metrics["prediction/mean"] - mean).abs() < 0.5,
        "{metrics:?} vs {mean}"
    );
    // A negative count is refused, naming it.
    let mut bad = data.clone();
    bad[3].label = Label::Float(-1.0);
    let train =
        || Ok::<_, estimator::datasets::Error>(from_vec(bad.clone()).batch_columnar(8, false));
    let dir = tempfile::tempdir().unwrap();
    let est = est.with_run_config(run_config(dir.path()));
    let error = est
        .train(train, TrainSpec::max_steps(5))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("regression label -1 is not a count (0 or more)"),
        "{error}"
    );
}

/// `data` over and over, in batches of 16: what the warm-start tests train on.
pub(crate) fn repeated(data: &[Example]) -> estimator::datasets::BoxDataset<ColumnarBatch> {
    from_vec(data.to_vec())
        .repeat(None)
        .batch_columnar(16, false)
        .boxed()
}

/// The rows of the 2-D variable `name` in the latest checkpoint of `model`.
fn variable_rows(model: &Path, name: &str) -> Vec<Vec<f32>> {
    let value = estimator::checkpoint::load_variable(model, name).unwrap();
    let width = value.shape[1];
    value.values.chunks(width).map(<[f32]>::to_vec).collect()
}

#[test]
fn a_dnn_warm_started_from_other_categories_follows_them_by_name() {
    let (schema, data) = classes();
    let columns = |vocabulary: [&str; 3]| -> Vec<FeatureColumn> {
        let colour = || categorical_column_with_vocabulary_list("colour", vocabulary);
        vec![
            numeric_column("x1").into(),
            indicator_column(colour()).into(),
            embedding_column(colour(), 2).into(),
        ]
    };
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let build = |model: &Path, vocabulary| {
        DnnClassifier::new(run_config(model), &schema, columns(vocabulary), [4], 3).unwrap()
    };
    let trained = build(&source, ["red", "green", "blue"]);
    let train = || Ok(repeated(&data));
    trained.train(train, TrainSpec::max_steps(10)).unwrap();

    let fresh = build(&target, ["blue", "mauve", "red"]);
    let settings = fresh.warm_start_following(&trained, &WarmStartSettings::new(&source));
    let followed: Vec<&str> = settings
        .var_name_to_vocab_info
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(followed, ["hidden.0.weight", "input.embeddings.0.weight"]);
    let frozen = fresh
        .clone()
        .with_optimizer(OptimizerSpec::sgd(0.0))
        .with_run_config(run_config(&target).with_warm_start_from(settings));
    frozen.train(train, TrainSpec::max_steps(1)).unwrap();

    // Embedding rows: blue, mauve, red, OOV then; red, green, blue, OOV before.
    let (before, after) = (
        variable_rows(&source, "input.embeddings.0.weight"),
        variable_rows(&target, "input.embeddings.0.weight"),
    );
    assert_eq!(after[0], before[2]);
    assert_eq!(after[2], before[0]);
    assert_eq!(after[3], before[3]);
    assert!(!before.contains(&after[1]), "mauve keeps its fresh row");
    // First-layer rows: x1, then the one-hot's blue, mauve, red, OOV, then the embedding's 2.
    let (before, after) = (
        variable_rows(&source, "hidden.0.weight"),
        variable_rows(&target, "hidden.0.weight"),
    );
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1], before[3]);
    assert_eq!(after[3], before[1]);
    assert_eq!(after[5..], before[5..]);
}

#[test]
fn a_linear_model_warm_started_from_other_categories_follows_them_by_name() {
    let (schema, data) = classes();
    let columns = |vocabulary: [&str; 3]| -> Vec<FeatureColumn> {
        let colour = categorical_column_with_vocabulary_list("colour", vocabulary);
        vec![numeric_column("x1").into(), colour.into()]
    };
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let build = |model: &Path, vocabulary| {
        LinearClassifier::new(run_config(model), &schema, columns(vocabulary), 3).unwrap()
    };
    let trained = build(&source, ["red", "green", "blue"]);
    let train = || Ok(repeated(&data));
    trained.train(train, TrainSpec::max_steps(10)).unwrap();

    let fresh = build(&target, ["blue", "mauve", "red"]);
    let settings = fresh.warm_start_following(&trained, &WarmStartSettings::new(&source));
    let followed: Vec<&str> = settings
        .var_name_to_vocab_info
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(followed, ["sparse_weights.weight"]);
    let frozen = fresh
        .with_optimizer(OptimizerSpec::sgd(0.0))
        .with_run_config(run_config(&target).with_warm_start_from(settings));
    frozen.train(train, TrainSpec::max_steps(1)).unwrap();
    let rows = |model: &Path| variable_rows(model, "sparse_weights.weight");
    // Rows: red, green, blue, OOV before; blue, mauve, red, OOV now.
    let (before, after) = (rows(&source), rows(&target));
    assert_eq!(
        (after[0].clone(), after[2].clone(), after[3].clone()),
        (before[2].clone(), before[0].clone(), before[3].clone())
    );
    assert!(
        after[1].iter().all(|w| *w == 0.0),
        "mauve starts at zero, as a fresh linear weight"
    );
    assert!(
        before.iter().all(|row| row.iter().any(|w| *w != 0.0)),
        "every trained row moved"
    );
}

#[test]
fn wide_and_deep_warm_started_from_other_categories_names_both_parts() {
    let (schema, data) = classes();
    let colour =
        |vocabulary: [&str; 3]| categorical_column_with_vocabulary_list("colour", vocabulary);
    let dir = tempfile::tempdir().unwrap();
    let build = |model: &Path, vocabulary| {
        let linear = vec![colour(vocabulary).into()];
        let dnn = vec![
            numeric_column("x1").into(),
            indicator_column(colour(vocabulary)).into(),
        ];
        DnnLinearCombinedClassifier::new(run_config(model), &schema, linear, dnn, [4], 3).unwrap()
    };
    let train = || Ok(repeated(&data));
    let source = dir.path().join("source");
    build(&source, ["red", "green", "blue"])
        .train(train, TrainSpec::max_steps(5))
        .unwrap();
    let previous = build(&source, ["red", "green", "blue"]);
    let target = dir.path().join("target");
    let fresh = build(&target, ["blue", "mauve", "red"]);
    let settings = fresh.warm_start_following(&previous, &WarmStartSettings::new(&source));
    let followed: Vec<&str> = settings
        .var_name_to_vocab_info
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        followed,
        ["dnn.hidden.0.weight", "linear.sparse_weights.weight"]
    );
    // The names are the model's: the warm start applies and training goes on.
    let warmed = fresh.with_run_config(run_config(&target).with_warm_start_from(settings));
    warmed.train(train, TrainSpec::max_steps(1)).unwrap();
}

#[test]
fn a_new_embedding_column_starts_fresh_where_another_column_s_table_stood() {
    let (schema, data) = classes();
    let colour = || embedding_column(colour(), 2).into();
    let buckets =
        || embedding_column(bucketized_column(numeric_column("x1"), [-1.0, 0.0, 1.0]), 2).into();
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("source"), dir.path().join("target"));
    let build = |model: &Path, columns: Vec<FeatureColumn>| {
        DnnClassifier::new(run_config(model), &schema, columns, [4], 3).unwrap()
    };
    let train = || Ok(repeated(&data));
    let trained = build(&source, vec![numeric_column("x1").into(), colour()]);
    trained.train(train, TrainSpec::max_steps(10)).unwrap();
    // Table 0 is now the new bucketized column's; the colour table moved to 1.
    let fresh = build(
        &target,
        vec![numeric_column("x1").into(), buckets(), colour()],
    );
    let settings = fresh.warm_start_following(&trained, &WarmStartSettings::new(&source));
    let renamed = &settings.var_name_to_prev_var_name["input.embeddings.1.weight"];
    assert_eq!(renamed, "input.embeddings.0.weight");
    let frozen = fresh
        .clone()
        .with_optimizer(OptimizerSpec::sgd(0.0))
        .with_run_config(run_config(&target).with_warm_start_from(settings));
    frozen.train(train, TrainSpec::max_steps(1)).unwrap();
    let old_colour = variable_rows(&source, "input.embeddings.0.weight");
    assert_eq!(
        variable_rows(&target, "input.embeddings.1.weight"),
        old_colour
    );
    let new_buckets = variable_rows(&target, "input.embeddings.0.weight");
    assert!(
        new_buckets.iter().all(|row| !old_colour.contains(row)),
        "a fresh table"
    );
}
