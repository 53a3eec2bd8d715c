//! Feature specs that cannot work, refused saying why; TensorFlow's names, accepted.

use super::*;

fn spec_error(json: &str) -> String {
    FeatureSpec::from_json(json).unwrap_err().to_string()
}

#[test]
fn specs_that_cannot_work_are_refused() {
    let fixed = |extra: &str| {
        format!(
            r#"{{"features": {{"x": {{"kind": "fixed", "shape": [2], "dtype": "float32"{extra}}}}}}}"#
        )
    };
    for (json, want) in [
        (r#"{"features": {}}"#.to_string(), "feature spec: no features"),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "float32"}}}"#.into(),
            "feature spec: feature 'x': a var_len float32 feature cannot be read",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2, 0], "dtype": "int64"}}}"#.into(),
            "feature spec: feature 'x': its shape holds no values",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "int64"}}, "label": "x"}"#
                .into(),
            "feature spec: feature 'x': the label must be a fixed feature of one value",
        ),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "int64"}}, "label": "x"}"#.into(),
            "feature spec: feature 'x': the label must be a fixed feature of one value",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "int64"}}, "label": "y"}"#
                .into(),
            "feature spec: label 'y' is not one of the features",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "float32"}}, "label": "x", "label_classes": 3}"#
                .into(),
            "feature spec: label_classes = 3 needs an int64 label of class ids",
        ),
        (fixed(r#", "default_value": [1, 2, 3]"#), "default_value holds 3 values; give one (repeated) or 2"),
        (fixed(r#", "default_value": "a""#), "default_value \"a\" is not a finite float32 value"),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [2], "dtype": "float32"}, "x[1]": {"kind": "fixed", "shape": [], "dtype": "string"}}}"#.into(),
            "feature spec: feature 'x[1]': its column 'x[1]' has the name of another column",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [65536, 65536], "dtype": "float32"}}}"#
                .into(),
            "feature spec: feature 'x': its shape holds 4294967296 values: with the features \
             before it, more than the 4194304 columns a spec can lay out",
        ),
        (fixed(r#", "dflt": 1"#), "unknown field `dflt`"),
        (
            r#"{"features": {"x": {"kind": "sparse", "dtype": "int64"}}}"#.into(),
            "unknown variant `sparse`",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "dtype": "int64"}}}"#.into(),
            "missing field `shape`",
        ),
        (
            r#"{"features": {"x": {"kind": "fixed", "shape": [], "dtype": "int32"}}}"#.into(),
            "unknown variant `int32`",
        ),
        (
            r#"{"features": {"x": {"kind": "var_len", "dtype": "int64"}, "x": {"kind": "var_len", "dtype": "int64"}}}"#.into(),
            "feature 'x' appears twice",
        ),
    ] {
        let err = spec_error(&json);
        assert!(err.contains(want), "{json}: {err}");
    }
    // TensorFlow's names are accepted as they are written in Python.
    let tf_names = spec(
        r#"{"features": {"x": {"kind": "FixedLenFeature", "shape": [1], "dtype": "tf.float32"},
                          "y": {"kind": "VarLenFeature", "dtype": "tf.string"}}}"#,
    );
    assert_eq!(tf_names.get("x").unwrap().dtype(), DType::Float32);
}
