//! Tests of the canned estimator: TF's export names, its builders and defaults, its serving
//! signature, an empty batch.

use estimator::export::DType;

use super::*;
use crate::canned::{DnnClassifier, DnnLinearCombinedRegressor};
use crate::feature_column::{
    bucketized_column, categorical_column_with_vocabulary_list, crossed_column, embedding_column,
    indicator_column, numeric_column, CrossSource,
};
use crate::network::Activation;

#[test]
fn canned_estimators_export_under_tf_s_names() {
    use crate::canned::{BaselineRegressor, LinearClassifier};
    assert_eq!(DnnClassifier::export_name(), "DNNClassifier");
    assert_eq!(
        DnnLinearCombinedRegressor::export_name(),
        "DNNLinearCombinedRegressor"
    );
    assert_eq!(LinearClassifier::export_name(), "LinearClassifier");
    assert_eq!(BaselineRegressor::export_name(), "BaselineRegressor");
}

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .category("c")
        .float("w")
        .int("y")
        .label("y")
}

fn colour() -> crate::feature_column::VocabularyListColumn {
    categorical_column_with_vocabulary_list("c", ["red", "blue"])
}

#[test]
fn builders_set_the_network_head_weight_and_optimizer() {
    let est = DnnClassifier::new(
        RunConfig::new("unused"),
        &schema(),
        vec![
            numeric_column("x").into(),
            indicator_column(colour()).into(),
        ],
        [16, 8],
        3,
    )
    .unwrap()
    .with_activation(Activation::Tanh)
    .with_dropout(0.25)
    .unwrap()
    .with_batch_norm(true)
    .with_optimizer(OptimizerSpec::adam(0.01))
    .with_weight_column("w")
    .unwrap();
    assert_eq!(est.network().hidden_units, [16, 8]);
    assert_eq!(est.network().activation, Activation::Tanh);
    assert_eq!(est.network().dropout, Some(0.25));
    assert!(est.network().batch_norm);
    assert_eq!(est.optimizer(), OptimizerSpec::adam(0.01));
    assert_eq!(est.weight_column().unwrap().name, "w");
    assert!(est.clone().with_dropout(1.5).is_err());
    let err = est.clone().with_weight_column("c").unwrap_err().to_string();
    assert!(err.contains("weight column 'c' must be numeric"));
    let json = serde_json::to_string(&est).unwrap();
    assert_eq!(serde_json::from_str::<DnnClassifier>(&json).unwrap(), est);
}

#[test]
fn the_default_optimizer_is_adagrad_at_tf_rate() {
    let est = DnnClassifier::new(
        RunConfig::new("unused"),
        &schema(),
        vec![numeric_column("x").into()],
        [4],
        2,
    )
    .unwrap();
    assert_eq!(est.optimizer(), OptimizerSpec::adagrad(0.05));
}

#[test]
fn wide_and_deep_trains_its_linear_part_with_ftrl_as_tf() {
    let est = DnnLinearCombinedRegressor::new(
        RunConfig::new("unused"),
        &schema(),
        vec![
            numeric_column("x").into(),
            indicator_column(colour()).into(),
        ],
        vec![numeric_column("x").into()],
        [4],
    )
    .unwrap();
    // TF: FTRL at min(0.2, 1 / sqrt(2 linear columns)) = 0.2; Adagrad 0.05 on the DNN.
    let want = OptimizerSpec::adagrad(0.05).with_part("linear", OptimizerSpec::ftrl(0.2));
    assert_eq!(est.optimizer(), want);
    assert_eq!(est.optimizer().kind(), "adagrad+linear:ftrl");
}

#[test]
fn the_signature_lists_every_input_once_and_the_head_outputs() {
    let est = DnnLinearCombinedRegressor::new(
        RunConfig::new("unused"),
        &schema(),
        vec![
            crossed_column(
                [
                    CrossSource::from("c"),
                    bucketized_column(numeric_column("x"), [0.0]).into(),
                ],
                10,
            )
            .into(),
            numeric_column("x").into(),
        ],
        vec![embedding_column(colour(), 2).into()],
        [4],
    )
    .unwrap();
    let signature = est.serving_signature();
    let inputs: Vec<(&str, DType)> = signature
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.dtype))
        .collect();
    assert_eq!(inputs, [("c", DType::String), ("x", DType::Float32)]);
    assert_eq!(signature.outputs, est.head().output_keys());
    let shapes: Vec<_> = signature.output_shapes.iter().collect();
    assert_eq!(shapes, [(&"predictions".to_string(), &vec![1])]);
}

#[test]
fn an_empty_batch_has_no_loss_and_no_predictions() {
    let est = DnnClassifier::new(
        RunConfig::new("unused"),
        &schema(),
        vec![numeric_column("x").into()],
        [4],
        3,
    )
    .unwrap();
    let device = Default::default();
    let model = est.build_model::<estimator::CpuBackend>(&device);
    let empty = est.to_device(&ColumnarBatch::default(), &device).unwrap();
    assert!(est.loss(&model, &empty, &device).is_err());
    assert!(est.predictions(&model, &empty, &device).unwrap().is_empty());
}
