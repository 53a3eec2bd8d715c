//! Tests of the CSV source: parsing, errors naming file, line and column, bad-row policies, restore.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::{DatasetExt, Label};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    if name.ends_with(".gz") {
        let f = File::create(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        gz.finish().unwrap();
    } else {
        std::fs::write(&path, text).unwrap();
    }
    path
}

fn iris_like() -> Schema {
    Schema::new()
        .float("sepal_length")
        .float("petal_width")
        .int("label")
        .label("label")
}

const GOOD: &str = "sepal_length,petal_width,label\n5.1,0.2,0\n6.0,1.5,1\n7.7,2.3,2\n";

fn messages(ds: &mut CsvDataset) -> Vec<Result<Example, String>> {
    ds.iter().map(|r| r.map_err(|e| e.to_string())).collect()
}

#[test]
fn reads_good_file_plain_and_gz() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["iris.csv", "iris.csv.gz"] {
        let path = write(&dir, name, GOOD);
        let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
        assert_eq!(ds.header(), ["sepal_length", "petal_width", "label"]);
        let rows: Vec<Example> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].dense, vec![5.1, 0.2]);
        assert_eq!(rows[2].label, Label::Class(2));
        assert!(rows[0].categorical.is_empty());
        assert_eq!(ds.records_read(), 3);
        assert_eq!(ds.path(), path);
        assert_eq!(ds.schema(), &iris_like());
    }
}

#[test]
fn gzip_detected_by_magic_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let gz = write(&dir, "data.gz", GOOD);
    let renamed = dir.path().join("data.csv");
    std::fs::rename(&gz, &renamed).unwrap();
    let mut ds = CsvDataset::open(&renamed, iris_like()).unwrap();
    assert_eq!(ds.iter().count(), 3);
}

#[test]
fn schema_order_not_file_order_and_extra_columns_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "x.csv",
        "b,ignored,a,colour,y\n1,zz,2,red,0.5\n3,zz,4, blue ,1.5\n",
    );
    let schema = Schema::new()
        .float("a")
        .category("colour")
        .int("b")
        .float("y")
        .label("y");
    let rows: Vec<Example> = CsvDataset::open(&path, schema)
        .unwrap()
        .iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows[0].dense, vec![2.0, 1.0]);
    assert_eq!(rows[1].categorical, vec!["blue".to_string()]);
    assert_eq!(rows[1].label, Label::Float(1.5));
}

#[test]
fn bad_float_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "iris.csv",
        "sepal_length,petal_width,label\n5.1,0.2,0\n6.0,abc,1\n7.7,2.3,2\n",
    );
    let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
    let out = messages(&mut ds);
    let expected = format!(
        "{}:3: column petal_width: cannot parse 'abc' as float (finite)",
        path.display()
    );
    assert_eq!(out[1], Err(expected));
    // Fail policy still lets the caller go on past the bad row.
    assert_eq!(out.len(), 3);
    assert!(out[2].is_ok());
}

#[test]
fn bad_class_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "c.csv", "sepal_length,petal_width,label\n1,2,-1\n");
    let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
    let err = ds.next_item().unwrap().unwrap_err().to_string();
    assert!(err.ends_with(":2: column label: cannot parse '-1' as class id (integer >= 0)"));
}

#[test]
fn missing_column_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "m.csv", "sepal_length,label\n1,0\n");
    let err = CsvDataset::open(&path, iris_like()).err().unwrap();
    assert!(matches!(&err, Error::MissingColumn { column, .. } if column == "petal_width"));
    assert!(err
        .to_string()
        .contains("header has no column 'petal_width'"));
    let empty = write(&dir, "empty.csv", "");
    assert!(matches!(
        CsvDataset::open(&empty, iris_like()),
        Err(Error::MissingColumn { .. })
    ));
}

#[test]
fn a_schema_column_the_header_names_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sepal_length,petal_width,label,petal_width\n1,2,0,3\n";
    let path = write(&dir, "twice.csv", text);
    let err = CsvDataset::open(&path, iris_like())
        .err()
        .unwrap()
        .to_string();
    let want = "line 1: the header names column 'petal_width' twice (fields 2 and 4)";
    assert_eq!(err, format!("{}: {want}", path.display()));
    // A column the schema does not read may be named twice.
    let path = write(
        &dir,
        "extra.csv",
        "x,sepal_length,petal_width,label,x\n1,2,3,0,4\n",
    );
    assert!(CsvDataset::open(&path, iris_like()).is_ok());
}

#[test]
fn ragged_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "r.csv",
        "sepal_length,petal_width,label\n1,2,0\n1,2\n1,2,0,9\n",
    );
    let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
    let out = messages(&mut ds);
    assert!(out[0].is_ok());
    assert_eq!(
        out[1].as_ref().unwrap_err(),
        &format!(
            "{}:3: expected 3 fields as in the header, found 2",
            path.display()
        )
    );
    assert!(out[2]
        .as_ref()
        .unwrap_err()
        .contains(":4: expected 3 fields"));
}

#[test]
fn empty_cells_with_and_without_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "e.csv", "a,c,y\n1,,0\n,x,1\n2,y,\n");
    let strict = Schema::new().float("a").category("c").int("y").label("y");
    let mut ds = CsvDataset::open(&path, strict).unwrap();
    let out = messages(&mut ds);
    // An empty category feature is "" by default; empty numbers and labels are errors.
    assert_eq!(out[0].as_ref().unwrap().categorical, vec![String::new()]);
    assert!(out[1]
        .as_ref()
        .unwrap_err()
        .ends_with(":3: column a: empty value and no default"));
    assert!(out[2]
        .as_ref()
        .unwrap_err()
        .ends_with(":4: column y: empty value and no default"));

    let lenient = Schema::new()
        .float("a")
        .with_default("-1")
        .category("c")
        .with_default("none")
        .int("y")
        .with_default("0")
        .label("y");
    let rows: Vec<Example> = CsvDataset::open(&path, lenient)
        .unwrap()
        .iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows[0].categorical, vec!["none".to_string()]);
    assert_eq!(rows[1].dense, vec![-1.0]);
    assert_eq!(rows[2].label, Label::Class(0));
}

#[test]
fn skip_policy_counts_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "s.csv",
        "sepal_length,petal_width,label\n1,2,0\nx,2,0\n1,2\n3,4,1\n1,,0\n",
    );
    let options = CsvOptions {
        bad_rows: BadRowPolicy::Skip,
        ..CsvOptions::default()
    };
    let ds = CsvDataset::open_with(&path, iris_like(), options).unwrap();
    let counter = ds.skipped_counter();
    let mut pipeline = ds.prefetch(2);
    let rows: Vec<Example> = pipeline.iter().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].dense, vec![3.0, 4.0]);
    assert_eq!(counter.get(), 3);
}

#[test]
fn delimiter_quotes_and_bom() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "q.tsv", "\u{feff}a;name\n1.5;\"x;y\"\n");
    let options = CsvOptions {
        delimiter: b';',
        ..CsvOptions::default()
    };
    let schema = Schema::new().float("a").category("name");
    let mut ds = CsvDataset::open_with(&path, schema, options).unwrap();
    let ex = ds.next_item().unwrap().unwrap();
    assert_eq!(ex.dense, vec![1.5]);
    assert_eq!(ex.categorical, vec!["x;y".to_string()]);
    assert_eq!(ex.label, Label::None);
}

#[test]
fn missing_file_and_bad_schema() {
    let err = CsvDataset::open("/no/such/file.csv", iris_like())
        .err()
        .unwrap();
    assert!(err.to_string().starts_with("/no/such/file.csv: "));
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "x.csv", GOOD);
    let bad = Schema::new().float("sepal_length").label("nope");
    assert!(matches!(
        CsvDataset::open(&path, bad),
        Err(Error::Schema(_))
    ));
}

#[test]
fn corrupt_gzip_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // Rows that differ, so that half the compressed bytes still hold the header and many
    // rows: the error comes part way through, not on opening.
    let mut text = String::from("sepal_length,petal_width,label\n");
    for i in 0..5000 {
        text.push_str(&format!("{}.{},{},{}\n", i % 97, i % 89, i % 83, i % 3));
    }
    let path = write(&dir, "big.csv.gz", &text);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
    let out = messages(&mut ds);
    assert!(out.len() > 100, "{} rows", out.len());
    assert!(out.last().unwrap().is_err());
    assert!(ds.next_item().is_none());
    std::fs::write(&path, &bytes[..30]).unwrap();
    let early = CsvDataset::open(&path, iris_like()).err().unwrap();
    assert!(
        early
            .to_string()
            .starts_with(&format!("{}: ", path.display())),
        "{early}"
    );
}

#[test]
fn restore_plain_and_gz_mid_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("sepal_length,petal_width,label\n");
    for i in 0..50 {
        text.push_str(&format!("{i},{}.5,{}\n", i * 2, i % 3));
    }
    for name in ["p.csv", "p.csv.gz"] {
        let path = write(&dir, name, &text);
        let full: Vec<Example> = CsvDataset::open(&path, iris_like())
            .unwrap()
            .iter()
            .map(Result::unwrap)
            .collect();
        for k in [0, 1, 17, 50] {
            let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
            for _ in 0..k {
                ds.next_item();
            }
            let pos = ds.position();
            let mut fresh = CsvDataset::open(&path, iris_like()).unwrap();
            fresh.restore(&pos).unwrap();
            let rest: Vec<Example> = fresh.iter().map(Result::unwrap).collect();
            assert_eq!(rest, full[k..].to_vec(), "{name} k = {k}");
            // Restoring a used dataset backwards works too.
            ds.restore(&Position::Csv {
                record: 0,
                byte: match CsvDataset::open(&path, iris_like()).unwrap().position() {
                    Position::Csv { byte, .. } => byte,
                    _ => unreachable!(),
                },
                line: 2,
                skipped: 0,
            })
            .unwrap();
            assert_eq!(ds.iter().count(), 50);
        }
    }
}

#[test]
fn line_numbers_survive_restore() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "l.csv",
        "sepal_length,petal_width,label\n1,2,0\n1,2,0\n1,2,0\nbad,2,0\n",
    );
    let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
    ds.next_item();
    ds.next_item();
    let pos = ds.position();
    let mut fresh = CsvDataset::open(&path, iris_like()).unwrap();
    fresh.restore(&pos).unwrap();
    fresh.next_item().unwrap().unwrap();
    let err = fresh.next_item().unwrap().unwrap_err().to_string();
    assert!(err.contains(":5: column sepal_length"), "{err}");
    assert!(fresh.restore(&Position::Index(0)).is_err());
    let past = Position::Csv {
        record: 1,
        byte: 10_000,
        line: 2,
        skipped: 0,
    };
    assert!(fresh.restore(&past).is_err());
}

#[test]
fn a_position_with_more_records_or_lines_than_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "c.csv", GOOD);
    // Each record and each line takes at least a byte: counting on from these would overflow.
    for (record, line) in [(u64::MAX, 2), (0, u64::MAX)] {
        let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
        let at = Position::Csv {
            record,
            byte: 31,
            line,
            skipped: 0,
        };
        let err = ds.restore(&at).unwrap_err().to_string();
        assert!(err.contains("cannot be read by byte 31"), "{err}");
    }
}
