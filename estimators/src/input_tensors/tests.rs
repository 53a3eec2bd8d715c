//! The device transform of both layouts, checked value by value, and its errors.

use datasets::{Example, Schema};
use estimator::CpuBackend as B;

use super::*;
use crate::feature_column::{
    bucketized_column, categorical_column_with_hash_bucket, categorical_column_with_identity,
    categorical_column_with_vocabulary_list, crossed_column, embedding_column, indicator_column,
    numeric_column, FeatureColumn, Layout,
};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .int("n")
        .category("c")
        .int("y")
        .label("y")
}

fn ex(x: f32, n: f32, c: &str) -> Example {
    Example {
        dense: vec![x, n],
        categorical: vec![c.into()],
        ..Example::default()
    }
}

fn colour() -> crate::feature_column::VocabularyListColumn {
    categorical_column_with_vocabulary_list("c", ["red", "green", "blue"])
}

fn tensors(
    columns: Vec<FeatureColumn>,
    layout: Layout,
    rows: &[Example],
) -> Result<InputTensors<B>> {
    let resolved = ResolvedColumns::resolve(columns, &schema(), layout).unwrap();
    let batch = ColumnarBatch::from_examples(rows).unwrap();
    InputTensors::new(&resolved, &batch, &Default::default())
}

fn floats(t: Option<Tensor<B, 2>>) -> Vec<f32> {
    t.unwrap().into_data().to_vec().unwrap()
}

fn ints(t: Tensor<B, 2, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().to_vec().unwrap()
}

#[test]
fn dnn_layout_is_normalised_values_then_one_hots_with_embedding_ids_aside() {
    let columns = vec![
        numeric_column("x").with_normalizer(1.0, 2.0).into(),
        bucketized_column(numeric_column("x"), [0.0, 10.0]).into(),
        indicator_column(colour()).into(),
        embedding_column(categorical_column_with_identity("n", 5), 3).into(),
    ];
    let rows = [
        ex(5.0, 4.0, "blue"),
        ex(-1.0, 0.0, "mauve"),
        ex(10.0, 2.0, "red"),
    ];
    let t = tensors(columns, Layout::Dnn, &rows).unwrap();
    assert_eq!(t.batch_size, 3);
    #[rustfmt::skip]
    let expected = vec![
        2.0,  0.0, 1.0, 0.0,  0.0, 0.0, 1.0, 0.0, // (5-1)/2; 5 in [0,10); blue
        -1.0, 1.0, 0.0, 0.0,  0.0, 0.0, 0.0, 1.0, // (-1-1)/2; -1 < 0; OOV
        4.5,  0.0, 0.0, 1.0,  1.0, 0.0, 0.0, 0.0, // (10-1)/2; 10 is an edge: above; red
    ];
    assert_eq!(floats(t.dense), expected);
    assert_eq!(t.embedding_ids.len(), 1);
    assert_eq!(ints(t.embedding_ids[0].clone()), [4, 0, 2]);
    assert!(t.sparse_ids.is_none());
}

#[test]
fn numeric_columns_are_picked_in_column_order_and_normalised_as_on_the_host() {
    // n before x: not the batch's order, so the values are gathered; std 0 counts as 1.
    let columns = vec![
        numeric_column("n").with_normalizer(3.0, 0.0).into(),
        numeric_column("x").with_normalizer(0.1, 0.3).into(),
        bucketized_column(numeric_column("x"), [0.5]).into(),
    ];
    let rows = [ex(0.7, 4.0, "red"), ex(f32::NAN, -2.0, "red")];
    let dense = floats(tensors(columns, Layout::Dnn, &rows).unwrap().dense);
    let normalizer = crate::feature_column::Normalizer {
        mean: 0.1,
        std: 0.3,
    };
    assert_eq!(dense[..2], [1.0, normalizer.apply(0.7)]);
    // (0.7 - 0.1) / 0.3 = 2 >= 0.5: the bucket above.
    assert_eq!(dense[2..4], [0.0, 1.0]);
    assert_eq!(dense[4], -5.0);
    assert!(dense[5].is_nan());
    // NaN is below no boundary: the last bucket, as TF's.
    assert_eq!(dense[6..], [0.0, 1.0]);
}

#[test]
fn linear_layout_turns_categorical_and_bucketized_columns_into_sparse_ids() {
    let columns = vec![
        numeric_column("x").into(),
        bucketized_column(numeric_column("x"), [0.0]).into(),
        colour().into(),
        categorical_column_with_hash_bucket("n", 100).into(),
        crossed_column(["c", "n"], 1000).into(),
    ];
    let t = tensors(
        columns,
        Layout::Linear,
        &[ex(-3.0, 7.0, "green"), ex(2.0, 7.0, "red")],
    )
    .unwrap();
    assert_eq!(floats(t.dense), [-3.0, 2.0]);
    // fnv1a_64("7") % 100 = 46; fnv1a_64(b"green\x1f7") % 1000 = 178.
    let ids = ints(t.sparse_ids.unwrap());
    assert_eq!(ids[..4], [0, 1, 46, 178]);
    assert_eq!(ids[4..7], [1, 0, 46]);
}

#[test]
fn a_bucketized_column_of_several_values_bucketizes_each_as_tf_does() {
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .int("y")
        .label("y");
    let source = numeric_column("x")
        .with_shape([2])
        .with_normalizer(1.0, 1.0);
    let buckets = || bucketized_column(source.clone(), [0.0, 10.0]);
    let columns = || vec![buckets().into()];
    let row = |x: [f32; 2]| Example {
        dense: x.to_vec(),
        ..Example::default()
    };
    // After the normaliser (x - 1): [5, -1] and [10, 20].
    let batch = ColumnarBatch::from_examples(&[row([6.0, 0.0]), row([11.0, 21.0])]).unwrap();
    let make = |layout| {
        let resolved = ResolvedColumns::resolve(columns(), &schema, layout).unwrap();
        InputTensors::<B>::new(&resolved, &batch, &Default::default()).unwrap()
    };
    // A DNN: each value's one-hot, side by side.
    #[rustfmt::skip]
    let expected = vec![
        0.0, 1.0, 0.0,  1.0, 0.0, 0.0,
        0.0, 0.0, 1.0,  0.0, 0.0, 1.0,
    ];
    assert_eq!(floats(make(Layout::Dnn).dense), expected);
    // A linear model: each value's bucket, an id column each (the model offsets them).
    let linear = make(Layout::Linear);
    assert!(linear.dense.is_none());
    assert_eq!(ints(linear.sparse_ids.unwrap()), [1, 0, 2, 2]);

    // Its indicator: the same one-hots; its embedding: value i's bucket b is row i × 3 + b.
    let wrapped = |column: FeatureColumn| {
        let resolved = ResolvedColumns::resolve(vec![column], &schema, Layout::Dnn).unwrap();
        InputTensors::<B>::new(&resolved, &batch, &Default::default()).unwrap()
    };
    assert_eq!(
        floats(wrapped(indicator_column(buckets()).into()).dense),
        expected
    );
    let embedded = wrapped(embedding_column(buckets(), 4).into());
    assert!(embedded.dense.is_none());
    assert_eq!(ints(embedded.embedding_ids[0].clone()), [1, 3, 2, 5]);
}

#[test]
fn batches_of_another_layout_and_bad_ids_are_errors_naming_them() {
    let columns = || vec![indicator_column(categorical_column_with_identity("n", 3)).into()];
    let resolved = ResolvedColumns::resolve(columns(), &schema(), Layout::Dnn).unwrap();
    let short = Example {
        dense: vec![1.0],
        categorical: vec!["red".into()],
        ..Example::default()
    };
    let batch = ColumnarBatch::from_examples(&[short]).unwrap();
    let err = InputTensors::<B>::new(&resolved, &batch, &Default::default())
        .unwrap_err()
        .to_string();
    let expected = "the batch has 1 numeric values per example, the input schema has 2";
    assert!(err.contains(expected), "{err}");
    let err = tensors(columns(), Layout::Dnn, &[ex(0.0, 3.0, "a")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("feature column 'n': value 3 is out of range [0, 3)"),
        "{err}"
    );
}
