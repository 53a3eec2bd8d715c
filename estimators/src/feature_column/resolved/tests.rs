//! Tests of resolved columns: both layouts, and errors naming the key, the column or the id.

use super::*;
use crate::feature_column::{
    bucketized_column, categorical_column_with_hash_bucket, categorical_column_with_identity,
    categorical_column_with_vocabulary_list, crossed_column, embedding_column, indicator_column,
    numeric_column,
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

#[test]
fn dnn_layout_is_normalised_values_then_one_hots_with_embedding_ids_aside() {
    let columns = vec![
        numeric_column("x").with_normalizer(1.0, 2.0).into(),
        bucketized_column(numeric_column("x"), [0.0, 10.0]).into(),
        indicator_column(colour()).into(),
        embedding_column(categorical_column_with_identity("n", 5), 3).into(),
    ];
    let resolved = ResolvedColumns::resolve(columns, &schema(), Layout::Dnn).unwrap();
    // 1 (x) + 3 buckets + 4 (3 colours + 1 OOV).
    assert_eq!(resolved.dense_width(), 8);
    assert_eq!(resolved.input_width(), 11);
    assert!(resolved.sparse_bucket_counts().is_empty());
    let batch = resolved
        .transform(&[
            ex(5.0, 4.0, "blue"),
            ex(-1.0, 0.0, "mauve"),
            ex(10.0, 2.0, "red"),
        ])
        .unwrap();
    assert_eq!(batch.batch_size, 3);
    #[rustfmt::skip]
    let expected = vec![
        2.0,  0.0, 1.0, 0.0,  0.0, 0.0, 1.0, 0.0, // (5-1)/2; 5 in [0,10); blue
        -1.0, 1.0, 0.0, 0.0,  0.0, 0.0, 0.0, 1.0, // (-1-1)/2; -1 < 0; OOV
        4.5,  0.0, 0.0, 1.0,  1.0, 0.0, 0.0, 0.0, // (10-1)/2; 10 is an edge: above; red
    ];
    assert_eq!(batch.dense, expected);
    assert_eq!(batch.embedding_ids, vec![vec![4, 0, 2]]);
    assert!(batch.sparse_ids.is_empty());
}

#[test]
fn linear_layout_turns_categorical_columns_into_sparse_ids() {
    let columns = vec![
        numeric_column("x").into(),
        bucketized_column(numeric_column("x"), [0.0]).into(),
        colour().into(),
        categorical_column_with_hash_bucket("n", 100).into(),
        crossed_column(["c", "n"], 1000).into(),
    ];
    let resolved = ResolvedColumns::resolve(columns, &schema(), Layout::Linear).unwrap();
    assert_eq!(resolved.dense_width(), 1);
    assert_eq!(resolved.sparse_bucket_counts(), [2, 4, 100, 1000]);
    let batch = resolved.transform(&[ex(-3.0, 7.0, "green")]).unwrap();
    assert_eq!(batch.dense, [-3.0]);
    // fnv1a_64("7") % 100 = 46; fnv1a_64(b"green\x1f7") % 1000 = 178.
    assert_eq!(
        batch.sparse_ids,
        vec![vec![0], vec![1], vec![46], vec![178]]
    );
}

#[test]
fn a_missing_key_is_named_with_the_input_columns() {
    let err = ResolvedColumns::resolve(
        vec![numeric_column("petal_width").into()],
        &schema(),
        Layout::Dnn,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "invalid configuration: feature column 'petal_width' is not in the input \
         (columns: x, n, c)"
    );
    let label = ResolvedColumns::resolve(vec![numeric_column("y").into()], &schema(), Layout::Dnn);
    assert!(label
        .unwrap_err()
        .to_string()
        .contains("'y' is the label column"));
}

#[test]
fn incompatible_types_duplicates_and_bare_categoricals_are_rejected() {
    let resolve = |columns: Vec<FeatureColumn>, layout| {
        ResolvedColumns::resolve(columns, &schema(), layout)
            .unwrap_err()
            .to_string()
    };
    let err = resolve(vec![numeric_column("c").into()], Layout::Dnn);
    assert!(err.contains(
        "feature column 'c' needs a numeric input (Float or Int), but the input's 'c' is \
         Category"
    ));
    let err = resolve(
        vec![numeric_column("x").into(), numeric_column("x").into()],
        Layout::Dnn,
    );
    assert!(err.contains("feature column 'x' is given twice"));
    let err = resolve(vec![colour().into()], Layout::Dnn);
    assert!(err.contains("feature column 'c' is categorical: wrap it in indicator_column"));
    let err = resolve(vec![embedding_column(colour(), 0).into()], Layout::Dnn);
    assert!(err.contains("'c_embedding': dimension must be at least 1"));
    assert!(resolve(vec![], Layout::Linear).contains("no feature columns"));
}

#[test]
fn examples_of_another_layout_and_bad_ids_are_errors_naming_them() {
    let columns = vec![indicator_column(categorical_column_with_identity("n", 3)).into()];
    let resolved = ResolvedColumns::resolve(columns, &schema(), Layout::Dnn).unwrap();
    let short = Example {
        dense: vec![1.0],
        categorical: vec!["red".into()],
        ..Example::default()
    };
    let err = resolved
        .transform(&[ex(0.0, 1.0, "a"), short])
        .unwrap_err()
        .to_string();
    let expected = "example 1 of the batch has 1 numeric values, the input schema has 2";
    assert!(err.contains(expected), "{err}");
    let err = resolved
        .transform(&[ex(0.0, 3.0, "a")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("feature column 'n': value 3 is out of range [0, 3)"));
}

#[test]
fn serving_inputs_list_each_key_once_with_its_type() {
    let columns = vec![
        numeric_column("x").into(),
        bucketized_column(numeric_column("x"), [0.0]).into(),
        indicator_column(colour()).into(),
        embedding_column(categorical_column_with_identity("n", 5), 2).into(),
    ];
    let resolved = ResolvedColumns::resolve(columns, &schema(), Layout::Dnn).unwrap();
    assert_eq!(
        resolved.serving_inputs(),
        [
            ("x".to_string(), DType::Float32),
            ("c".to_string(), DType::String),
            ("n".to_string(), DType::Float32),
        ]
    );
    let json = serde_json::to_string(&resolved).unwrap();
    let back: ResolvedColumns = serde_json::from_str(&json).unwrap();
    assert_eq!(back, resolved);
    assert_eq!(
        back.transform(&[ex(1.0, 2.0, "blue")]).unwrap(),
        resolved.transform(&[ex(1.0, 2.0, "blue")]).unwrap()
    );
}
