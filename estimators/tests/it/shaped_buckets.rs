//! A bucketized column of a shaped numeric column (`bucketized_column(numeric_column("x")
//! .with_shape([2]), …)`) trains as TF's does: each value bucketized on its own, so a
//! model of it is the model of one bucketized column per value, weight for weight, and in
//! a DNN the model of its indicator column (TF's multi-hot of its ids); its export takes
//! `x` as one input of shape `[2]`, an embedding column of it too, which trains on two
//! replicas as on their batches together.

use std::path::Path;

use estimator::datasets::{from_vec, ColumnarBatch, DatasetExt, Example, Label, Schema};
use estimator::distribute::Strategy;
use estimator::export::{Instance, ServableEstimator};
use estimator::head::HeadPrediction;
use estimator::{Estimator, EstimatorExt, OptimizerSpec, Predictor, TrainSpec};
use estimators::feature_column::{
    bucketized_column, crossed_column, embedding_column, indicator_column, numeric_column,
    Combiner, CrossedColumn, FeatureColumn,
};
use estimators::{DnnClassifier, LinearClassifier};
use serde_json::json;

use crate::canned::run_config;

const BOUNDARIES: [f32; 3] = [-1.0, 0.0, 1.0];

/// 200 rows of two numbers in [-2, 2), labelled by whether both are on one side of 0.
fn data() -> (Schema, Vec<Example>) {
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .int("label")
        .label("label");
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as f32 / (1u64 << 31) as f32 * 4.0 - 2.0
    };
    let rows = (0..200)
        .map(|_| {
            let (a, b) = (next(), next());
            Example {
                dense: vec![a, b],
                label: Label::Class(u32::from((a > 0.0) == (b > 0.0))),
                ..Example::default()
            }
        })
        .collect();
    (schema, rows)
}

/// The shaped column, its indicator column, and one bucketized column per value of it.
fn shaped() -> Vec<FeatureColumn> {
    let source = numeric_column("x").with_shape([2]);
    vec![bucketized_column(source, BOUNDARIES).into()]
}

fn shaped_indicator() -> Vec<FeatureColumn> {
    let source = numeric_column("x").with_shape([2]);
    vec![indicator_column(bucketized_column(source, BOUNDARIES)).into()]
}

fn per_value() -> Vec<FeatureColumn> {
    (["x[0]", "x[1]"].into_iter())
        .map(|key| bucketized_column(numeric_column(key), BOUNDARIES).into())
        .collect()
}

/// Trains `est` 30 steps on `data` and gives its predictions of every row.
fn trained<E>(est: &E, data: &[Example]) -> Vec<HeadPrediction>
where
    E: Estimator<Batch = ColumnarBatch, Prediction = HeadPrediction>,
{
    let train = || {
        Ok(from_vec(data.to_vec())
            .repeat(None)
            .batch_columnar(20, false))
    };
    est.train(train, TrainSpec::max_steps(30)).unwrap();
    let all = || Ok(from_vec(data.to_vec()).batch_columnar(50, false));
    let predictions = est.predict(all, None).unwrap();
    predictions.collect::<Result<_, _>>().unwrap()
}

/// Exports `est` and predicts the first rows of `data` from instances with `x` as one list,
/// as a served request sends them.
fn served<E>(est: &E, dir: &Path, data: &[Example]) -> Vec<HeadPrediction>
where
    E: ServableEstimator<Batch = ColumnarBatch, Prediction = HeadPrediction>,
{
    let export = est.export(&dir.join("export")).unwrap();
    let predictor = Predictor::<E>::load(&export).unwrap();
    let input = &predictor.signature().inputs[0];
    assert_eq!(
        (input.name.as_str(), input.shape.as_slice()),
        ("x", &[2][..])
    );
    let instances: Vec<Instance> = (data[..5].iter())
        .map(|row| json!({ "x": row.dense }).as_object().unwrap().clone())
        .collect();
    let estimator = predictor.estimator();
    let batch = estimator
        .batch_from_instances(predictor.signature(), &instances)
        .unwrap();
    predictor.predict(&batch).unwrap()
}

#[test]
fn a_linear_model_of_a_shaped_bucketized_column_is_that_of_a_column_per_value() {
    let (schema, data) = data();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let linear = |dir: &Path, columns| {
        LinearClassifier::new(run_config(dir), &schema, columns, 2)
            .unwrap()
            .with_optimizer(OptimizerSpec::adagrad(0.3))
    };
    let shaped_model = linear(dirs[0].path(), shaped());
    let predictions = trained(&shaped_model, &data);
    let per_value_model = linear(dirs[1].path(), per_value());
    assert_eq!(predictions, trained(&per_value_model, &data));
    // Trained: the weights start at zero, so every logit would be 0 untrained.
    assert!(predictions.iter().all(|p| p.logits[0] != 0.0));
    assert_eq!(
        served(&shaped_model, dirs[0].path(), &data),
        predictions[..5]
    );
}

#[test]
fn a_linear_model_averaging_a_columns_weights_trains_and_serves_so() {
    let (schema, data) = data();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let linear = |dir: &Path, combiner| {
        LinearClassifier::new(run_config(dir), &schema, shaped(), 2)
            .unwrap()
            .with_optimizer(OptimizerSpec::sgd(0.1))
            .with_sparse_combiner(combiner)
    };
    let mean = linear(dirs[0].path(), Combiner::Mean);
    let predictions = trained(&mean, &data);
    // The mean halves each step's move of the two values' weights against their sum.
    let sum = linear(dirs[1].path(), Combiner::Sum);
    assert_ne!(predictions, trained(&sum, &data));
    assert_eq!(served(&mean, dirs[0].path(), &data), predictions[..5]);
}

/// Each value's sign crossed with each value's sign: four ids an example, one of them the
/// pair (x[0], x[1]) that decides the label.
fn crossed_signs() -> CrossedColumn {
    let signs = || bucketized_column(numeric_column("x").with_shape([2]), [0.0]);
    crossed_column([signs(), signs()], 64)
}

/// The share of `predictions` of `data`'s labels.
fn accuracy(predictions: &[HeadPrediction], data: &[Example]) -> f64 {
    let right = (predictions.iter().zip(data))
        .filter(
            |(p, row)| matches!(row.label, Label::Class(c) if p.class_ids == Some(vec![c.into()])),
        )
        .count();
    right as f64 / data.len() as f64
}

#[test]
fn a_cross_of_shaped_bucketized_columns_trains_and_serves_in_linear_and_dnn_models() {
    let (schema, data) = data();
    let dirs = [(); 3].map(|_| tempfile::tempdir().unwrap());
    let linear = LinearClassifier::new(
        run_config(dirs[0].path()),
        &schema,
        [crossed_signs().into()],
        2,
    )
    .unwrap()
    .with_optimizer(OptimizerSpec::adagrad(0.3));
    let predictions = trained(&linear, &data);
    // No single value's sign tells the label; the pair's does.
    assert!(
        accuracy(&predictions, &data) > 0.95,
        "{}",
        accuracy(&predictions, &data)
    );
    assert_eq!(served(&linear, dirs[0].path(), &data), predictions[..5]);
    let columns: [FeatureColumn; 2] = [
        indicator_column(crossed_signs()).into(),
        embedding_column(crossed_signs(), 3).into(),
    ];
    for (dir, column) in dirs[1..].iter().zip(columns) {
        let dnn = DnnClassifier::new(run_config(dir.path()), &schema, vec![column], [8], 2)
            .unwrap()
            .with_optimizer(OptimizerSpec::adam(0.05));
        let predictions = trained(&dnn, &data);
        assert!(
            accuracy(&predictions, &data) > 0.9,
            "{}",
            accuracy(&predictions, &data)
        );
        assert_eq!(served(&dnn, dir.path(), &data), predictions[..5]);
    }
}

#[test]
fn a_dnn_of_a_shaped_bucketized_column_is_that_of_a_column_per_value_and_of_its_indicator() {
    let (schema, data) = data();
    let dirs = [(); 3].map(|_| tempfile::tempdir().unwrap());
    let dnn = |dir: &Path, columns| {
        DnnClassifier::new(run_config(dir), &schema, columns, [8], 2)
            .unwrap()
            .with_optimizer(OptimizerSpec::adam(0.05))
    };
    let shaped_model = dnn(dirs[0].path(), shaped());
    let predictions = trained(&shaped_model, &data);
    let per_value_model = dnn(dirs[1].path(), per_value());
    assert_eq!(predictions, trained(&per_value_model, &data));
    assert_eq!(
        served(&shaped_model, dirs[0].path(), &data),
        predictions[..5]
    );
    let indicator_model = dnn(dirs[2].path(), shaped_indicator());
    assert_eq!(predictions, trained(&indicator_model, &data));
    assert_eq!(
        served(&indicator_model, dirs[2].path(), &data),
        predictions[..5]
    );
}

#[test]
fn an_embedding_of_a_shaped_bucketized_column_trains_and_serves_from_one_input() {
    let (schema, data) = data();
    let dir = tempfile::tempdir().unwrap();
    let source = numeric_column("x").with_shape([2]);
    let column = embedding_column(bucketized_column(source, BOUNDARIES), 3);
    let columns = vec![column.with_combiner(Combiner::Sqrtn).into()];
    let model = DnnClassifier::new(run_config(dir.path()), &schema, columns, [8], 2)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.05));
    let predictions = trained(&model, &data);
    let table = model.variable_value("input.embeddings.0.weight").unwrap();
    assert_eq!(table.shape, [2 * 4, 3]);
    // The rows of both values' buckets, combined: the label needs both values, and 30 steps
    // take the model well above the half a constant answer gets (the unit tests check the
    // rows and the combiner exactly).
    let right = (predictions.iter().zip(&data))
        .filter(|(p, row)| Label::Class(p.class_ids.as_ref().unwrap()[0] as u32) == row.label)
        .count();
    assert!(right > 125, "{right} of 200");
    assert_eq!(served(&model, dir.path(), &data), predictions[..5]);
}

#[test]
fn an_embedding_of_a_shaped_bucketized_column_trains_on_two_replicas_as_on_their_batches() {
    let (schema, data) = data();
    let dirs = [(); 2].map(|_| tempfile::tempdir().unwrap());
    let model = |dir: &Path| {
        let source = numeric_column("x").with_shape([2]);
        let column = embedding_column(bucketized_column(source, BOUNDARIES), 3)
            .with_combiner(Combiner::Sqrtn)
            .with_max_norm(0.5);
        let config = run_config(dir).with_peer_timeout_secs(20);
        DnnClassifier::new(config, &schema, vec![column.into()], [8], 2)
            .unwrap()
            .with_optimizer(OptimizerSpec::adam(0.05))
    };
    let input = |batch| {
        let data = data.clone();
        move || Ok(from_vec(data).repeat(None).batch_columnar(batch, false))
    };
    let (replicated, single) = (model(dirs[0].path()), model(dirs[1].path()));
    let mirrored = Strategy::Mirrored { replicas: 2 };
    (replicated.train_with(input(10), TrainSpec::max_steps(30), mirrored)).unwrap();
    single.train(input(20), TrainSpec::max_steps(30)).unwrap();
    let names = single.variable_names().unwrap();
    assert!(
        names.iter().any(|n| n.starts_with("input.embeddings")),
        "{names:?}"
    );
    for name in names {
        let [a, b] = [&replicated, &single].map(|m| m.variable_value(&name).unwrap().values);
        let diff = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(diff <= 1e-5, "{name}: max |replicas - single| = {diff}");
    }
}
