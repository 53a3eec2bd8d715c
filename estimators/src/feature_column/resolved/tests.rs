//! Tests of resolved columns: both layouts, and errors naming the key, the column or the id.

use super::*;
use crate::feature_column::{
    bucketized_column, categorical_column_with_identity, categorical_column_with_vocabulary_list,
    embedding_column, indicator_column, numeric_column,
};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .int("n")
        .category("c")
        .int("y")
        .label("y")
}

fn colour() -> crate::feature_column::VocabularyListColumn {
    categorical_column_with_vocabulary_list("c", ["red", "green", "blue"])
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
}
