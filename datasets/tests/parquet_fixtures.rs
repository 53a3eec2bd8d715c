//! Parquet files pyarrow wrote (`tests/fixtures/parquet/`, made by
//! `scripts/fixtures/make_parquet_fixtures.py`) read back against what pyarrow itself
//! reads from them: every column type, dictionary-encoded strings, nulls, several row
//! groups, three codecs; and files that cannot be read refused naming them.

use std::path::PathBuf;

use datasets::{
    infer_parquet_schema, ColumnType, Dataset, DatasetExt, Example, Label, Labels, ParquetDataset,
    Schema,
};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/parquet")
        .join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

const FILES: [&str; 3] = ["mixed.parquet", "mixed.zstd.parquet", "mixed.gzip.parquet"];

fn rows(file: &str, schema: Schema) -> Vec<Example> {
    let mut ds = ParquetDataset::open(fixture(file), schema).unwrap();
    ds.iter().map(Result::unwrap).collect()
}

/// pyarrow's value of `column` in row `i`, as an `f32` (a null: `None`).
fn number(expected: &Value, column: &str, i: usize) -> Option<f32> {
    let value = &expected["columns"][column][i];
    match value {
        Value::Bool(b) => Some(f32::from(u8::from(*b))),
        Value::Null => None,
        v => Some(v.as_f64().unwrap() as f32),
    }
}

#[test]
fn every_column_type_reads_as_pyarrow_reads_it() {
    let all = expected();
    for file in FILES {
        let expected = &all[file];
        let path = fixture(file);
        let schema = infer_parquet_schema(&path, Some("label")).unwrap();
        let kinds: Vec<(&str, ColumnType)> = schema
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.kind))
            .collect();
        use ColumnType::*;
        assert_eq!(
            kinds,
            [
                ("x", Float),
                ("y", Float),
                ("n", Int),
                ("small", Int),
                ("flag", Int),
                ("colour", Category),
                ("city", Category),
                ("label", Int),
                ("species", Category),
                ("target", Float)
            ],
            "{file}"
        );
        let groups: Vec<u64> = serde_json::from_value(expected["row_groups"].clone()).unwrap();
        let ds = ParquetDataset::open(&path, schema.clone().with_default_for("y", "0.25")).unwrap();
        assert_eq!(ds.row_groups(), groups, "{file}");
        let read: Vec<Example> = ds
            .into_batches(3, false)
            .iter()
            .flat_map(|b| b.unwrap().to_examples())
            .collect();
        assert_eq!(read.len(), 10);
        for (i, row) in read.iter().enumerate() {
            let dense: Vec<f32> = ["x", "y", "n", "small", "flag", "target"]
                .iter()
                .map(|c| number(expected, c, i).unwrap_or(0.25))
                .collect();
            assert_eq!(row.dense, dense, "{file} row {i}");
            let text = |c: &str| expected["columns"][c][i].as_str().unwrap_or("").to_string();
            assert_eq!(
                row.categorical,
                [text("colour"), text("city"), text("species")],
                "{file} row {i}"
            );
            let label = expected["columns"]["label"][i].as_u64().unwrap() as u32;
            assert_eq!(row.label, Label::Class(label));
        }
    }
}

trait WithDefault {
    fn with_default_for(self, column: &str, default: &str) -> Self;
}

impl WithDefault for Schema {
    fn with_default_for(mut self, column: &str, default: &str) -> Self {
        for c in &mut self.columns {
            if c.name == column {
                c.default = Some(default.into());
            }
        }
        self
    }
}

#[test]
fn a_projection_reads_only_the_schema_columns_and_any_label_kind() {
    let all = expected();
    let expected = &all["mixed.parquet"];
    // Class names, from a plain string column; the dictionary column as the one feature.
    let names = rows(
        "mixed.parquet",
        Schema::new()
            .category("colour")
            .category("species")
            .label("species"),
    );
    for (i, row) in names.iter().enumerate() {
        let colour = expected["columns"]["colour"][i].as_str().unwrap_or("");
        assert_eq!(row.categorical, [colour]);
        assert!(row.dense.is_empty());
        let species = expected["columns"]["species"][i].as_str().unwrap();
        assert_eq!(row.label, Label::Name(species.into()));
    }
    // Regression targets; a column read twice is not asked for.
    let targets = ParquetDataset::open(
        fixture("mixed.parquet"),
        Schema::new().float("x").float("target").label("target"),
    )
    .unwrap()
    .into_batches(10, false)
    .next_item()
    .unwrap()
    .unwrap();
    let Labels::Float(values) = &targets.labels else {
        panic!("{:?}", targets.labels)
    };
    let want: Vec<f32> = (0..10)
        .map(|i| number(expected, "target", i).unwrap())
        .collect();
    assert_eq!(values, &want);
}

#[test]
fn nulls_without_a_default_are_named_by_row_group_row_and_column() {
    let path = fixture("mixed.parquet");
    let schema = infer_parquet_schema(&path, Some("label")).unwrap();
    let mut ds = ParquetDataset::open(&path, schema).unwrap();
    let results: Vec<_> = ds.iter().collect();
    // y is null in rows 2, 5 and 9: row 2 is row 2 of row group 0; the error ends the stream.
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[2].as_ref().unwrap_err().to_string(),
        format!(
            "{}: row group 0, row 2: column y: null value and no default",
            path.display()
        )
    );
    // Restored past it, the next null is row 1 of row group 1.
    ds.restore(&datasets::Position::Parquet {
        row_group: 0,
        row: 3,
    })
    .unwrap();
    let results: Vec<_> = ds.iter().collect();
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[2].as_ref().unwrap_err().to_string(),
        format!(
            "{}: row group 1, row 1: column y: null value and no default",
            path.display()
        )
    );
}

#[test]
fn unreadable_columns_and_files_are_refused_naming_them() {
    let path = fixture("unsupported.parquet");
    let file = path.display();
    assert_eq!(
        infer_parquet_schema(&path, Some("label")).unwrap_err().to_string(),
        format!("{file}: column day: holds Date32 values, which no column type reads: give a schema without it")
    );
    // A schema that leaves them out reads the rest.
    let read = rows(
        "unsupported.parquet",
        Schema::new().float("x").int("label").label("label"),
    );
    assert_eq!(
        read.iter().map(|r| r.dense[0]).collect::<Vec<_>>(),
        [1.0, 2.0]
    );
    let list = ParquetDataset::open(&path, Schema::new().category("values"))
        .err()
        .unwrap();
    assert!(
        list.to_string()
            .starts_with(&format!("{file}: column values: holds List(")),
        "{list}"
    );

    // Not Parquet at all (a CSV file), and cut short: one error naming the file.
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/iris.csv");
    let error = infer_parquet_schema(&csv, None).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{}: not a readable Parquet file", csv.display())),
        "{error}"
    );
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.parquet");
    let bytes = std::fs::read(fixture("mixed.parquet")).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let error = ParquetDataset::open(&cut, Schema::new().float("x"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with(&format!("{}: not a readable Parquet file", cut.display())),
        "{error}"
    );
}
