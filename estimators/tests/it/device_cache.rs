//! The canned estimators' training table kept on the device: the batches gathered there
//! are those `to_device` makes of the same rows, and training on them is bit-identical.

use burn::backend::NdArray;
use estimator::datasets::{
    from_vec, table_indices, BoxDataset, ColumnarBatch, DatasetExt, Error, Example,
};
use estimator::device_cache::{CachedBatch, DeviceCached, GatherInput, RowIndices};
use estimator::{EstimatorExt, TrainSpec};
use estimators::canned::InputValues;
use estimators::feature_column::{
    bucketized_column, categorical_column_with_vocabulary_list, crossed_column, numeric_column,
    CrossSource, FeatureColumn,
};
use estimators::{BaselineRegressor, DnnClassifier, DnnLinearCombinedClassifier, LinearRegressor};

use crate::canned::{
    answers, answers_classifier, dnn_columns, examples, run_config, schema, targets,
};

const ROWS: [u32; 6] = [5, 0, 17, 5, 239, 100];

fn linear_columns() -> Vec<FeatureColumn> {
    let x1_buckets = bucketized_column(numeric_column("x1"), [-1.0, 0.0, 1.0]);
    let colour = categorical_column_with_vocabulary_list("colour", ["red", "green"]);
    vec![
        numeric_column("x2").into(),
        x1_buckets.clone().into(),
        colour.into(),
        crossed_column([CrossSource::from("colour"), x1_buckets.into()], 64).into(),
    ]
}

/// The batch of `ROWS` gathered from the uploaded table against `to_device` of those rows:
/// the same loss to the bit and the same metrics (which read the labels kept on the host).
fn gathers_what_to_device_makes<E>(est: &E, data: &[Example])
where
    E: GatherInput<Batch = ColumnarBatch>,
{
    // NdArray: its random initialisation draws from a generator of its own, not the one
    // the trainings of other tests seed for Flex.
    let device = Default::default();
    let table = ColumnarBatch::from_examples(data).unwrap();
    let model = est.build_model::<NdArray>(&device);
    let resident = est.upload::<NdArray>(&table, &device).unwrap();
    let rows = RowIndices::new(&ROWS, &device);
    let gathered = est.gather(&resident, &rows).unwrap();
    let made = est
        .to_device::<NdArray>(&table.gather(&ROWS).unwrap(), &device)
        .unwrap();
    let loss = |batch| -> u32 {
        let loss = est.loss(&model, batch, &device).unwrap();
        loss.into_scalar().to_bits()
    };
    assert_eq!(loss(&gathered), loss(&made));
    assert_eq!(
        est.eval_metrics(&model, &gathered, &device).unwrap(),
        est.eval_metrics(&model, &made, &device).unwrap()
    );
    assert!(est.table_bytes(&table) >= (table.rows * 4 * table.dense_width) as u64);
}

#[test]
fn every_canned_network_gathers_the_batch_to_device_makes() {
    let dir = tempfile::tempdir().unwrap();
    let (classes_schema, classes) = answers();
    let dnn = answers_classifier(dir.path(), &classes_schema)
        .with_weight_column("w")
        .unwrap();
    gathers_what_to_device_makes(&dnn, &classes);
    assert!(dnn.network().input_values() >= 5);

    let (targets_schema, values) = targets();
    let linear = LinearRegressor::new(run_config(dir.path()), &targets_schema, linear_columns())
        .unwrap()
        .with_weight_column("w")
        .unwrap();
    gathers_what_to_device_makes(&linear, &values);
    let baseline = BaselineRegressor::new(run_config(dir.path()), &targets_schema);
    gathers_what_to_device_makes(&baseline, &values);

    let wide_deep = DnnLinearCombinedClassifier::new(
        run_config(dir.path()),
        &classes_schema,
        linear_columns(),
        dnn_columns(),
        [8],
        2,
    )
    .unwrap()
    .with_label_vocabulary(["no", "yes"])
    .unwrap();
    gathers_what_to_device_makes(&wide_deep, &classes);
}

type Input = BoxDataset<CachedBatch<ColumnarBatch>>;

#[test]
fn a_dnn_classifier_trains_to_the_bit_on_its_table_on_the_device() {
    let data = examples(61, |x1, x2, colour| {
        estimator::datasets::Label::Class(u32::from(x1 + x2 > 0.0) + u32::from(colour == 2))
    });
    let schema = schema(
        estimator::datasets::Schema::new()
            .int("label")
            .label("label"),
    );
    let table = ColumnarBatch::from_examples(&data).unwrap();
    let crc = |budget: u64, input: &dyn Fn() -> Result<Input, Error>, steps: u64| {
        let dir = tempfile::tempdir().unwrap();
        let config = run_config(dir.path())
            .with_intra_op_threads(1)
            .with_device_cache_bytes(budget);
        let est = DnnClassifier::new(config, &schema, dnn_columns(), [8], 3)
            .unwrap()
            .with_dropout(0.2)
            .unwrap()
            .with_weight_column("w")
            .unwrap();
        let cached = DeviceCached::new(est).with_table(table.clone());
        let outcome = cached.train(input, TrainSpec::max_steps(steps)).unwrap();
        (
            outcome.weights_crc32c.unwrap(),
            outcome.last_loss.unwrap().to_bits(),
        )
    };
    let rows = || -> Result<Input, Error> {
        Ok(from_vec(data.clone())
            .cache_table()
            .shuffle(20, 9)
            .repeat(None)
            .batch_columnar(8, false)
            .map(CachedBatch::Batch)
            .boxed())
    };
    let numbers = || -> Result<Input, Error> {
        Ok(table_indices(data.len())
            .shuffle(20, 9)
            .repeat(None)
            .batch(8, false)
            .map(CachedBatch::Rows)
            .boxed())
    };
    let host = crc(0, &rows, 11);
    assert_eq!(crc(1 << 30, &numbers, 11), host);
    // Beyond the budget: gathered on the host, the same batches.
    assert_eq!(crc(100, &numbers, 11), host);
}
