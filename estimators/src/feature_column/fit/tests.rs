//! Tests of fit_columns: what is learned, where it is nested, what is refused.

use datasets::{from_vec, DatasetExt, Label};

use super::*;
use crate::feature_column::{
    bucketized_column, categorical_column_with_hash_bucket,
    categorical_column_with_learned_vocabulary, categorical_column_with_vocabulary_list,
    crossed_column, embedding_column, indicator_column, numeric_column, CrossSource, NumericColumn,
    VocabularyListColumn,
};

fn schema() -> Schema {
    Schema::new()
        .float("price")
        .category("site")
        .int("hour")
        .int("clicked")
        .label("clicked")
}

fn row(price: f32, site: &str, hour: f32) -> Example {
    Example {
        dense: vec![price, hour],
        categorical: vec![site.into()],
        label: Label::Class(0),
    }
}

/// Prices 1, 2, 3, 6 (mean 3, population std sqrt(3.5)); site b twice, a and c once.
fn rows() -> Vec<Example> {
    vec![
        row(1.0, "b", 7.0),
        row(2.0, "c", 7.0),
        row(3.0, "a", 9.0),
        row(6.0, "b", 7.0),
    ]
}

fn batches() -> impl Dataset<Item = ColumnarBatch> {
    from_vec(rows()).batch_columnar(3, false)
}

fn price() -> NumericColumn {
    numeric_column("price").with_learned_normalizer()
}

fn site() -> VocabularyListColumn {
    categorical_column_with_learned_vocabulary("site")
}

#[test]
fn normalizers_and_vocabularies_are_learned_in_one_pass() {
    let columns = vec![
        price().into(),
        indicator_column(site()).into(),
        embedding_column(categorical_column_with_learned_vocabulary("hour"), 2).into(),
    ];
    let fitted = fit_columns(columns, &schema(), batches()).unwrap();
    let want: Vec<FeatureColumn> = vec![
        numeric_column("price")
            .with_normalizer(3.0, 3.5f32.sqrt())
            .into(),
        // Most frequent first; a tie in byte order.
        indicator_column(categorical_column_with_vocabulary_list(
            "site",
            ["b", "a", "c"],
        ))
        .into(),
        // An Int key's values as decimal text.
        embedding_column(
            categorical_column_with_vocabulary_list("hour", ["7", "9"]),
            2,
        )
        .into(),
    ];
    assert_eq!(fitted, want);
    // The fitted columns save exactly as hand-written ones: no trace of the learning.
    assert_eq!(
        serde_json::to_string(&fitted).unwrap(),
        serde_json::to_string(&want).unwrap()
    );
    // Rows one by one learn the same.
    let one_by_one = fit_columns(
        vec![price().into(), indicator_column(site()).into()],
        &schema(),
        from_vec(rows()),
    )
    .unwrap();
    assert_eq!(one_by_one[..], fitted[..2]);
}

#[test]
fn learned_parts_nested_in_crosses_and_buckets_are_filled() {
    let cross = crossed_column(
        [
            CrossSource::from(site().with_max_size(1)),
            bucketized_column(price(), [0.0]).into(),
        ],
        16,
    );
    let fitted = fit_columns(vec![indicator_column(cross).into()], &schema(), batches()).unwrap();
    let want = crossed_column(
        [
            CrossSource::from(categorical_column_with_vocabulary_list("site", ["b"])),
            bucketized_column(
                numeric_column("price").with_normalizer(3.0, 3.5f32.sqrt()),
                [0.0],
            )
            .into(),
        ],
        16,
    );
    assert_eq!(fitted, vec![indicator_column(want).into()]);
}

#[test]
fn min_count_and_max_size_trim_the_vocabulary_and_unseen_values_go_to_oov() {
    let columns = vec![indicator_column(site().with_min_count(2).with_num_oov_buckets(1)).into()];
    let resolved = ResolvedColumns::fit(columns, &schema(), Layout::Dnn, batches()).unwrap();
    let FeatureColumn::Indicator(indicator) = &resolved.columns()[0] else {
        panic!("an indicator column");
    };
    let crate::feature_column::CategoricalColumn::VocabularyList(learned) = &indicator.categorical
    else {
        panic!("a vocabulary column");
    };
    assert_eq!(learned.vocabulary, ["b"]);
    assert_eq!(learned.id_of("b").unwrap(), 0);
    assert_eq!(learned.id_of("a").unwrap(), 1);
    assert_eq!(learned.id_of("never seen").unwrap(), 1);
    let err = fit_columns(vec![site().with_min_count(3).into()], &schema(), batches())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'site': the learned vocabulary is empty"),
        "{err}"
    );
    assert!(err.contains("seen min_count 3 times or more"), "{err}");
}

#[test]
fn nothing_to_learn_reads_no_data() {
    let columns = vec![
        numeric_column("price").into(),
        categorical_column_with_hash_bucket("site", 5).into(),
    ];
    let failing = from_vec(vec![0u8]).map(|_| -> ColumnarBatch {
        panic!("the data was read");
    });
    let fitted = fit_columns(columns.clone(), &schema(), failing).unwrap();
    assert_eq!(fitted, columns);
}

#[test]
fn unfitted_columns_missing_keys_and_empty_input_are_refused_naming_them() {
    let resolve = |column: FeatureColumn| {
        ResolvedColumns::resolve([column], &schema(), Layout::Linear)
            .unwrap_err()
            .to_string()
    };
    assert!(resolve(price().into()).contains(
        "feature column 'price' learns its normalizer from the training input: pass the \
         columns through fit_columns"
    ));
    assert!(resolve(site().into()).contains("'site': its vocabulary is learned"));
    let missing = fit_columns(
        vec![categorical_column_with_learned_vocabulary("country").into()],
        &schema(),
        batches(),
    );
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("feature column 'country' is not in the input"));
    let empty = fit_columns(
        vec![price().into()],
        &schema(),
        from_vec(Vec::<Example>::new()),
    );
    assert!(empty.unwrap_err().to_string().contains("has no rows"));
    let other_layout = from_vec(vec![Example {
        dense: vec![1.0],
        ..Example::default()
    }]);
    let err = fit_columns(vec![price().into()], &schema(), other_layout).unwrap_err();
    assert!(err.to_string().contains("the input schema has 2 and 1"));
}

#[test]
fn a_column_still_to_learn_keeps_that_through_serde() {
    let columns: Vec<FeatureColumn> = vec![price().into(), site().with_max_size(5).into()];
    let json = serde_json::to_string(&columns).unwrap();
    let back: Vec<FeatureColumn> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, columns);
    assert!(matches!(&back[0], FeatureColumn::Numeric(c) if c.learns_normalizer()));
}

#[test]
fn learned_normalizers_are_the_feature_statistics_of_the_input() {
    use crate::feature_column::standardized_numeric_columns;
    use datasets::FeatureStats;
    let stats = FeatureStats::compute(from_vec(rows())).unwrap();
    let by_stats = standardized_numeric_columns(&schema(), &stats).unwrap();
    let learned = ["price", "hour"].map(|k| numeric_column(k).with_learned_normalizer().into());
    assert_eq!(
        fit_columns(learned, &schema(), batches()).unwrap(),
        by_stats
    );
}

#[test]
fn a_shaped_column_learns_one_normalizer_over_all_its_values() {
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .int("clicked")
        .label("clicked");
    let rows = [[1.0, 2.0], [3.0, 10.0]].map(|dense| Example {
        dense: dense.to_vec(),
        categorical: vec![],
        label: Label::Class(0),
    });
    let shaped = numeric_column("x")
        .with_shape([2])
        .with_learned_normalizer();
    let data = from_vec(rows.to_vec()).batch_columnar(2, false);
    let fitted = fit_columns([shaped.into()], &schema, data).unwrap();
    // Values 1, 2, 3, 10: mean 4, population variance (9 + 4 + 1 + 36) / 4.
    let FeatureColumn::Numeric(column) = &fitted[0] else {
        panic!("{fitted:?}")
    };
    let normalizer = column.normalizer.unwrap();
    assert_eq!(normalizer.mean, 4.0);
    assert!(
        (normalizer.std - 12.5f32.sqrt()).abs() < 1e-6,
        "{normalizer:?}"
    );
    assert_eq!(column.shape, [2]);
}
