//! Tests of resolved columns: both layouts, and errors naming the key, the column or the id.

use super::*;
use crate::feature_column::{
    bucketized_column, categorical_column_with_identity, categorical_column_with_vocabulary_list,
    crossed_column, embedding_column, indicator_column, numeric_column, shared_embeddings,
    CrossSource, EmbeddingInitializer,
};
use estimator::export::DType;

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
    for bad in [0.0, -1.0, f32::INFINITY, f32::NAN] {
        let column = embedding_column(colour(), 2).with_max_norm(bad);
        let err = resolve(vec![column.into()], Layout::Dnn);
        let want = format!("'c_embedding': max_norm {bad} must be finite and above 0");
        assert!(err.contains(&want), "{err}");
    }
    let uniform = EmbeddingInitializer::Uniform { min: 1.0, max: 0.0 };
    let column = embedding_column(colour(), 2).with_initializer(uniform);
    let err = resolve(vec![column.into()], Layout::Dnn);
    assert!(
        err.contains("'c_embedding': initializer max 0.0 must be above its min 1.0"),
        "{err}"
    );
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
    let inputs: Vec<(String, DType)> = (resolved.serving_inputs().into_iter())
        .map(|input| (input.name, input.dtype))
        .collect();
    assert_eq!(
        inputs,
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

/// The error reading the saved form of `columns` (resolved against `schema()`) once `edit`
/// has changed it.
fn refused_when_saved(
    columns: Vec<FeatureColumn>,
    layout: Layout,
    edit: impl FnOnce(&mut serde_json::Value),
) -> String {
    let resolved = ResolvedColumns::resolve(columns, &schema(), layout).unwrap();
    let mut saved = serde_json::to_value(&resolved).unwrap();
    edit(&mut saved);
    serde_json::from_value::<ResolvedColumns>(saved)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_saved_form_gets_the_checks_of_a_new_one() {
    use crate::feature_column::categorical_column_with_hash_bucket;
    use serde_json::json;
    let hashed = || vec![indicator_column(categorical_column_with_hash_bucket("c", 4)).into()];
    let err = refused_when_saved(hashed(), Layout::Dnn, |v| {
        v["columns"][0]["indicator"]["categorical"]["hash_bucket"]["hash_bucket_size"] = json!(0)
    });
    assert!(err.contains("feature column 'c': hash_bucket_size must be at least 1"));
    let listed = || vec![indicator_column(colour()).into()];
    let vocabulary = |v: &mut serde_json::Value| -> serde_json::Value {
        v["columns"][0]["indicator"]["categorical"]["vocabulary_list"].take()
    };
    let err = refused_when_saved(listed(), Layout::Dnn, |v| {
        let mut list = vocabulary(v);
        list["vocabulary"] = json!(["red", "red", "blue"]);
        v["columns"][0]["indicator"]["categorical"]["vocabulary_list"] = list;
    });
    assert!(
        err.contains("'red' appears twice in the vocabulary"),
        "{err}"
    );
    let err = refused_when_saved(listed(), Layout::Dnn, |v| {
        let mut list = vocabulary(v);
        list["num_oov_buckets"] = json!(u64::MAX);
        v["columns"][0]["indicator"]["categorical"]["vocabulary_list"] = list;
    });
    assert!(
        err.contains("num_oov_buckets 18446744073709551615 is too large"),
        "{err}"
    );
    let bucketized = || vec![bucketized_column(numeric_column("x"), [0.0, 1.0]).into()];
    let err = refused_when_saved(bucketized(), Layout::Dnn, |v| {
        v["columns"][0]["bucketized"]["boundaries"] = json!([1.0, 0.0])
    });
    assert!(err.contains("must be strictly increasing"), "{err}");
    let standardised = || vec![numeric_column("x").with_normalizer(1.0, 2.0).into()];
    let err = refused_when_saved(standardised(), Layout::Dnn, |v| {
        v["columns"][0]["numeric"]["normalizer"]["std"] = json!(-2.0)
    });
    assert!(err.contains("must be finite, std >= 0"), "{err}");
    let err = refused_when_saved(standardised(), Layout::Dnn, |v| {
        v["inputs"]["sources"]["x"]["dense"]["index"] = json!(2)
    });
    assert!(err.contains("input 'x': its place"), "{err}");
    let embedded = || vec![embedding_column(colour(), 2).into()];
    let err = refused_when_saved(embedded(), Layout::Dnn, |v| {
        v["columns"][0]["embedding"]["dimension"] = json!(0)
    });
    assert!(err.contains("dimension must be at least 1"), "{err}");
    let two = || vec![numeric_column("x").into(), numeric_column("n").into()];
    let err = refused_when_saved(two(), Layout::Dnn, |v| {
        v["inputs"]["sources"]["n"]["dense"]["index"] = json!(0)
    });
    assert!(err.contains("are recorded at the same place"), "{err}");
    let err = refused_when_saved(two(), Layout::Dnn, |v| {
        v["columns"] = json!([v["columns"][0].clone()])
    });
    assert!(
        err.contains("not those the saved feature columns read"),
        "{err}"
    );
}

#[test]
fn bucket_counts_too_large_to_add_are_rejected() {
    use crate::feature_column::categorical_column_with_hash_bucket;
    let half = i64::MAX as usize / 2 + 1;
    let columns = vec![
        categorical_column_with_hash_bucket("c", half).into(),
        categorical_column_with_identity("n", half).into(),
    ];
    let err = ResolvedColumns::resolve(columns, &schema(), Layout::Linear)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bucket counts add up to more than"), "{err}");
}

#[test]
fn each_value_of_the_dense_input_has_a_name() {
    let columns = vec![
        numeric_column("x").into(),
        indicator_column(colour().with_num_oov_buckets(2)).into(),
        bucketized_column(numeric_column("n"), vec![0.0, 10.0]).into(),
        embedding_column(colour(), 3).into(),
    ];
    let resolved = ResolvedColumns::resolve(columns, &schema(), Layout::Dnn).unwrap();
    let names = resolved.dense_input_names();
    assert_eq!(
        names,
        [
            "x",
            "c_indicator=red",
            "c_indicator=green",
            "c_indicator=blue",
            "c_indicator#oov0",
            "c_indicator#oov1",
            "n_bucketized#0",
            "n_bucketized#1",
            "n_bucketized#2",
        ]
    );
    // The embedding's values come after the dense matrix, from its own table.
    assert_eq!(names.len(), resolved.dense_width());
}

#[test]
fn columns_sharing_an_embedding_table_need_its_shape() {
    let schema = Schema::new().category("home").category("away");
    let teams = |away: &[&str]| {
        let home = categorical_column_with_vocabulary_list("home", ["a", "b"]);
        let away = categorical_column_with_vocabulary_list("away", away.to_vec());
        shared_embeddings([home, away], 3)
    };
    let resolve = |columns: Vec<EmbeddingColumn>| {
        let columns = columns.into_iter().map(FeatureColumn::from);
        ResolvedColumns::resolve(columns, &schema, Layout::Dnn)
    };
    let shared = resolve(teams(&["b", "a"])).unwrap();
    let names: Vec<String> = shared.columns().iter().map(FeatureColumn::name).collect();
    assert_eq!(names, ["home_shared_embedding", "away_shared_embedding"]);
    let tables: Vec<String> = (shared.embedding_tables().iter())
        .map(|t| t.table_name())
        .collect();
    assert_eq!(tables, ["away_home_shared_embedding"]);
    assert_eq!(shared.embedding_table_of(), [0, 0]);
    assert_eq!(shared.input_width(), 6);

    let err = resolve(teams(&["a", "b", "c"])).unwrap_err().to_string();
    let want = "feature columns 'home_shared_embedding' and 'away_shared_embedding' share the \
                embedding table 'away_home_shared_embedding' but have 3 and 4 ids";
    assert!(err.contains(want), "{err}");
    let mut narrow = teams(&["a", "b"]);
    narrow[1].dimension = 2;
    let err = resolve(narrow).unwrap_err().to_string();
    assert!(err.contains("but have 3 and 2 dimensions"), "{err}");
    let mut frozen = teams(&["a", "b"]);
    frozen[1].trainable = false;
    let err = resolve(frozen).unwrap_err().to_string();
    assert!(
        err.contains("'away_home_shared_embedding' but not its trainable"),
        "{err}"
    );
    let mut zeros = teams(&["a", "b"]);
    zeros[0].initializer = Some(EmbeddingInitializer::Constant { value: 0.0 });
    let err = resolve(zeros).unwrap_err().to_string();
    assert!(err.contains("but not its initializer"), "{err}");
    // TF's default, given on one column and left to the other, is one initializer.
    let mut spelled = teams(&["a", "b"]);
    spelled[0].initializer = Some(EmbeddingInitializer::default_for(3));
    assert!(resolve(spelled).is_ok());
    // Saved and read back, the columns share their table still.
    let text = serde_json::to_string(&shared).unwrap();
    let back: ResolvedColumns = serde_json::from_str(&text).unwrap();
    assert_eq!(back.embedding_table_of(), [0, 0]);
}

#[test]
fn a_shaped_numeric_column_reads_its_values_and_is_served_as_one_input() {
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .float("x[2]")
        .category("c")
        .float("z")
        .int("y")
        .label("y");
    let resolve = |columns: Vec<FeatureColumn>| {
        ResolvedColumns::resolve(columns, &schema, Layout::Dnn).map_err(|e| e.to_string())
    };
    let shaped = numeric_column("x")
        .with_shape([3])
        .with_normalizer(1.0, 2.0);
    let columns = vec![
        numeric_column("z").into(),
        shaped.clone().into(),
        indicator_column(colour()).into(),
    ];
    let resolved = resolve(columns).unwrap();
    assert_eq!(resolved.dense_width(), 1 + 3 + 4);
    let names = resolved.dense_input_names();
    assert_eq!(names[..4], ["z", "x#0", "x#1", "x#2"]);
    let inputs: Vec<(String, DType, Vec<usize>)> = (resolved.serving_inputs().into_iter())
        .map(|i| (i.name, i.dtype, i.shape))
        .collect();
    let want = [
        ("z".to_string(), DType::Float32, vec![]),
        ("x".to_string(), DType::Float32, vec![3]),
        ("c".to_string(), DType::String, vec![]),
    ];
    assert_eq!(inputs, want);
    // Every value normalised, in row order, after z.
    let batch = ColumnarBatch::from_examples(&[datasets::Example {
        dense: vec![3.0, 5.0, 7.0, 9.0],
        categorical: vec!["red".into()],
        label: datasets::Label::Class(0),
    }])
    .unwrap();
    let device = Default::default();
    let tensors = crate::InputTensors::<estimator::CpuBackend>::new(&resolved, &batch, &device);
    let dense = tensors
        .unwrap()
        .dense
        .unwrap()
        .into_data()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(dense[..4], [9.0, 1.0, 2.0, 3.0]);

    let err = resolve(vec![numeric_column("x").with_shape([3, 0]).into()]).unwrap_err();
    assert!(
        err.contains("'x': shape [3, 0] must hold from 1 to"),
        "{err}"
    );
    let err = resolve(vec![numeric_column("x").with_shape([4]).into()]).unwrap_err();
    assert!(
        err.contains("'x[3]' (used by 'x') is not in the input"),
        "{err}"
    );
    // One value in a shape reads the key itself.
    let one = resolve(vec![numeric_column("z").with_shape([1]).into()]).unwrap();
    assert_eq!(one.serving_inputs()[0].shape, [1]);
}

#[test]
fn a_shaped_column_may_not_share_its_name_with_an_input_another_column_reads() {
    let schema = Schema::new()
        .float("x")
        .float("x[0]")
        .float("x[1]")
        .int("y")
        .label("y");
    let columns = vec![
        numeric_column("x").into(),
        numeric_column("x").with_shape([2]).into(),
    ];
    // Two columns of one name are refused as such; a bucketized one of `x` reads it too.
    let err = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
    let columns = vec![
        bucketized_column(numeric_column("x"), [0.0]).into(),
        numeric_column("x").with_shape([2]).into(),
    ];
    let err = ResolvedColumns::resolve(columns, &schema, Layout::Dnn).unwrap_err();
    let want = "feature column 'x' of shape [2] is served as the input 'x', which another \
                column reads";
    assert!(err.to_string().contains(want), "{err}");
}

#[test]
fn a_bucketized_column_of_several_values_has_each_value_s_buckets() {
    let schema = Schema::new()
        .float("x[0]")
        .float("x[1]")
        .float("x[2]")
        .float("z")
        .category("c")
        .int("y")
        .label("y");
    let resolve = |columns: Vec<FeatureColumn>, layout| {
        ResolvedColumns::resolve(columns, &schema, layout).map_err(|e| e.to_string())
    };
    let buckets = || bucketized_column(numeric_column("x").with_shape([3]), [0.0, 1.0]);
    let columns = || {
        vec![
            numeric_column("z").into(),
            buckets().into(),
            numeric_column("x").with_shape([3]).into(),
        ]
    };

    // A DNN: three one-hots of three buckets; the numeric column of the same key and shape
    // shares its serving input.
    let dnn = resolve(columns(), Layout::Dnn).unwrap();
    assert_eq!(dnn.dense_width(), 1 + 9 + 3);
    let names = dnn.dense_input_names();
    assert_eq!(
        names[1..4],
        ["x_bucketized#0", "x_bucketized#1", "x_bucketized#2"]
    );
    assert_eq!(names[9], "x_bucketized#8");
    let inputs: Vec<(String, Vec<usize>)> = (dnn.serving_inputs().into_iter())
        .map(|i| (i.name, i.shape))
        .collect();
    assert_eq!(inputs, [("z".into(), vec![]), ("x".into(), vec![3])]);

    // A linear model: each value's ids one after the other (TF's `i × 3 + bucket`).
    let linear = resolve(columns(), Layout::Linear).unwrap();
    assert_eq!(linear.sparse_slot_offsets(), (vec![0, 3, 6], 9));
    let names = linear.sparse_input_names();
    assert_eq!(names.len(), 9);
    assert_eq!(
        (names[0].as_str(), names[8].as_str()),
        ("x_bucketized#0", "x_bucketized#8")
    );
    assert_eq!(
        FeatureColumn::from(buckets()).num_buckets(),
        Some(9),
        "TF's num_buckets"
    );

    // Its indicator column: the same one-hots, named as the indicator's, from one input.
    let indicator = resolve(vec![indicator_column(buckets()).into()], Layout::Dnn).unwrap();
    assert_eq!(indicator.dense_width(), 9);
    assert_eq!(indicator.parts(), &dnn.parts()[1..2]);
    let names = indicator.dense_input_names();
    let ends = (names[0].as_str(), names[8].as_str());
    assert_eq!(
        ends,
        ("x_bucketized_indicator#0", "x_bucketized_indicator#8")
    );
    let inputs = indicator.serving_inputs();
    assert_eq!(
        (inputs[0].name.as_str(), &inputs[0].shape[..]),
        ("x", &[3][..])
    );

    // Its embedding column: a row per value's bucket, each value's ids computed alike.
    let embedded = resolve(vec![embedding_column(buckets(), 2).into()], Layout::Dnn).unwrap();
    assert_eq!(embedded.embedding_columns()[0].num_buckets(), 9);
    assert_eq!(embedded.input_width(), 2);
    let ColumnInput::Bucketized { role, indices, .. } = &embedded.parts()[0] else {
        panic!("{:?}", embedded.parts());
    };
    assert_eq!((role, indices.len()), (&IdRole::Embedding, 3));
    assert_eq!(embedded.serving_inputs()[0].shape, [3]);

    // In a cross, each value's id with each of the other components': 3 combinations an
    // example, sharing the cross's 10 rows in a linear model; a cross's serving input is `x`
    // of shape [3] too.
    let crossed = crossed_column([buckets().into(), CrossSource::from("c")], 10);
    assert_eq!(crossed.ids_per_example(), 3);
    let linear = resolve(vec![crossed.into()], Layout::Linear).unwrap();
    assert_eq!(linear.sparse_slot_offsets(), (vec![0, 0, 0], 10));
    assert_eq!(linear.sparse_ids_per_column(), [3, 3, 3]);
    let shapes: Vec<Vec<usize>> = (linear.serving_inputs().into_iter())
        .map(|input| input.shape)
        .collect();
    assert_eq!(shapes, [vec![3], vec![]]);
    // A cross whose combinations would multiply past 4096 an example is refused.
    let wide = || bucketized_column(numeric_column("x").with_shape([3]), [0.0]);
    let keys: Vec<CrossSource> = (0..8).map(|_| wide().into()).collect();
    let err = resolve(vec![crossed_column(keys, 10).into()], Layout::Linear).unwrap_err();
    assert!(
        err.contains("give 6561 combinations an example, more than 4096"),
        "{err}"
    );

    // Its key is one serving input: of one shape.
    let two_shapes = vec![buckets().into(), numeric_column("x").with_shape([2]).into()];
    let err = resolve(two_shapes, Layout::Dnn).unwrap_err();
    assert!(err.contains("key 'x' have the shapes [3] and [2]"), "{err}");
}
