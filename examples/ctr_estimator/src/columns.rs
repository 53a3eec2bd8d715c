//! The input schema and the feature columns of the click-through-rate model: the part of a
//! model of one's own that `docs/feature-columns.md` shows.

use estimator::datasets::Schema;
use estimators::feature_column::{
    bucketized_column, categorical_column_with_hash_bucket,
    categorical_column_with_learned_vocabulary, crossed_column, embedding_column, indicator_column,
    numeric_column, CrossSource, FeatureColumn,
};

/// The click log's columns (as `data::HEADER`), `clicked` the 0/1 label.
pub fn ctr_schema() -> Schema {
    ctr_features_schema()
        .int("clicked")
        .label("clicked")
        .with_label_classes(2)
}

/// The features alone: the columns of rows to predict, which have no label. Their values
/// sit where they sit in the labelled rows, so the same resolved columns read both.
pub fn ctr_features_schema() -> Schema {
    Schema::new()
        .category("site")
        .category("app")
        .category("device")
        .int("hour")
        .int("position")
        .float("price")
}

/// Size of the learned site vocabulary; rarer sites share the one OOV bucket.
pub const SITE_VOCABULARY_SIZE: usize = 10;

/// The model's feature columns, before `fit_columns` learns their vocabularies and
/// statistics from the training input.
pub fn ctr_feature_columns() -> Vec<FeatureColumn> {
    // The ten most frequent sites, learned; any other site (rare, or never seen) is the
    // out-of-vocabulary bucket, id 10.
    let site = categorical_column_with_learned_vocabulary("site")
        .with_max_size(SITE_VOCABULARY_SIZE)
        .with_num_oov_buckets(1);
    // 300 apps hashed into 64 ids: no vocabulary to keep, some apps share an id.
    let app = categorical_column_with_hash_bucket("app", 64);
    let device = categorical_column_with_learned_vocabulary("device");
    let daypart = bucketized_column(numeric_column("hour"), [6.0, 12.0, 18.0]);
    // Device by part of the day: what neither says alone.
    let device_by_daypart = [CrossSource::from(device.clone()), daypart.into()];
    vec![
        embedding_column(site, 4).into(),
        embedding_column(app, 4).into(),
        indicator_column(device).into(),
        indicator_column(crossed_column(device_by_daypart, 32)).into(),
        // Standardised with the training input's mean and standard deviation.
        numeric_column("position").with_learned_normalizer().into(),
        numeric_column("price").with_learned_normalizer().into(),
    ]
}
