mod footers;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt8Array,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{infer_parquet_schema, ParquetDataset};
use crate::combinators::collect;
use crate::{ColumnType, ColumnarBatch, Dataset, DatasetExt, Error, Example, Label, Schema};

/// Writes `columns` as a Parquet file of row groups of `group` rows (snappy).
fn write(dir: &Path, name: &str, columns: Vec<(&str, ArrayRef)>, group: usize) -> PathBuf {
    let path = dir.join(name);
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path
}

/// 23 rows in row groups of 5: `a` = row, `b` = -row, `c` (every third null, dictionary),
/// `label` = row % 3.
fn rows_file(dir: &Path) -> PathBuf {
    let n = 23;
    let a = Float32Array::from_iter_values((0..n).map(|i| i as f32));
    let b = Int64Array::from_iter_values((0..n).map(|i| -i));
    let c: DictionaryArray<Int32Type> = (0..n)
        .map(|i| (i % 3 != 2).then(|| ["p", "q", "r", "s"][i as usize % 4]))
        .collect();
    let label = Int64Array::from_iter_values((0..n).map(|i| i % 3));
    write(
        dir,
        "rows.parquet",
        vec![
            ("a", Arc::new(a)),
            ("b", Arc::new(b)),
            ("c", Arc::new(c)),
            ("label", Arc::new(label)),
        ],
        5,
    )
}

fn schema() -> Schema {
    Schema::new()
        .category("c")
        .int("b")
        .float("a")
        .int("label")
        .label("label")
}

#[test]
fn rows_come_in_schema_order_across_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let path = rows_file(dir.path());
    let ds = ParquetDataset::open(&path, schema()).unwrap();
    assert_eq!(ds.row_groups(), [5, 5, 5, 5, 3]);
    assert_eq!(ds.len_hint(), Some(23));
    let rows = collect(ds);
    assert_eq!(rows.len(), 23);
    for (i, row) in rows.iter().enumerate() {
        // Dense values in schema order (b before a); a null category is "".
        assert_eq!(row.dense, [-(i as f32), i as f32], "row {i}");
        let c = if i % 3 == 2 {
            ""
        } else {
            ["p", "q", "r", "s"][i % 4]
        };
        assert_eq!(row.categorical, [c], "row {i}");
        assert_eq!(row.label, Label::Class(i as u32 % 3));
    }
}

#[test]
fn positions_resume_at_every_row_and_batches_match_batch_columnar() {
    let dir = tempfile::tempdir().unwrap();
    let path = rows_file(dir.path());
    let open = || ParquetDataset::open(&path, schema()).unwrap();
    let full = collect(open());
    for k in 0..=full.len() {
        let mut ds = open();
        ds.iter().take(k).for_each(drop);
        let position = ds.position();
        let json = serde_json::to_string(&position).unwrap();
        let mut resumed = open();
        resumed
            .restore(&serde_json::from_str(&json).unwrap())
            .unwrap();
        assert_eq!(collect(resumed), full[k..], "after {k} rows");
    }
    for (size, drop_remainder) in [(1, false), (4, false), (7, true), (23, false), (100, false)] {
        let mut columnar = open().batch_columnar(size, drop_remainder);
        let mut direct = open().into_batches(size, drop_remainder);
        assert_eq!(direct.len_hint(), columnar.len_hint().or(direct.len_hint()));
        loop {
            assert_eq!(direct.position(), columnar.position(), "size {size}");
            match (direct.next_item(), columnar.next_item()) {
                (None, None) => break,
                (Some(a), Some(b)) => assert_eq!(a.unwrap(), b.unwrap(), "size {size}"),
                (a, b) => panic!("size {size}: {a:?} vs {b:?}"),
            }
        }
    }
    // A batch stream resumes where it stood, mid row group.
    let mut batches = open().into_batches(4, false);
    batches.next_item();
    batches.next_item();
    let position = batches.position();
    let rest: Vec<ColumnarBatch> = collect(batches);
    let mut resumed = open().into_batches(4, false);
    resumed.restore(&position).unwrap();
    assert_eq!(collect(resumed), rest);
    let rows: Vec<Example> = rest.iter().flat_map(ColumnarBatch::to_examples).collect();
    assert_eq!(rows, full[8..]);
}

#[test]
fn bad_positions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = rows_file(dir.path());
    let mut ds = ParquetDataset::open(&path, schema()).unwrap();
    for (group, row) in [(0, 6), (5, 1), (6, 0)] {
        let position = crate::Position::Parquet {
            row_group: group,
            row,
        };
        assert!(ds.restore(&position).is_err(), "{group} {row}");
    }
    ds.restore(&crate::Position::Parquet {
        row_group: 5,
        row: 0,
    })
    .unwrap();
    assert!(ds.next_item().is_none());
    assert!(ds.restore(&crate::Position::Index(0)).is_err());
}

#[test]
fn inferred_types_follow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = rows_file(dir.path());
    let schema = infer_parquet_schema(&path, Some("label")).unwrap();
    let kinds: Vec<(&str, ColumnType)> = schema
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a", ColumnType::Float),
            ("b", ColumnType::Int),
            ("c", ColumnType::Category),
            ("label", ColumnType::Int)
        ]
    );
    assert_eq!(schema.label.as_deref(), Some("label"));
    let missing = infer_parquet_schema(&path, Some("y"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        missing,
        format!(
            "{}: column y: the file has no such column (its columns: a, b, c, label)",
            path.display()
        )
    );
}

/// The first error reading `path` through `schema`, row by row and in batches (the same).
fn read_error(path: &Path, schema: Schema) -> String {
    let rows = ParquetDataset::open(path, schema.clone()).and_then(|ds| {
        ds.into_iter_results()
            .into_iter()
            .find_map(Result::err)
            .ok_or_else(|| Error::Custom("no error".into()))
    });
    let rows = rows.map_or_else(|e| e.to_string(), |e| e.to_string());
    if let Ok(ds) = ParquetDataset::open(path, schema) {
        let mut batches = ds.into_batches(3, false);
        let error = batches.iter().find_map(Result::err).map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some(rows.as_str()),
            "batches and rows agree"
        );
        assert!(batches.next_item().is_none(), "an error ends the stream");
    }
    rows
}

impl ParquetDataset {
    fn into_iter_results(mut self) -> Vec<Result<Example, Error>> {
        let mut out: Vec<_> = self.iter().collect();
        assert!(self.next_item().is_none(), "an error ends the stream");
        out.shrink_to_fit();
        out
    }
}

#[test]
fn values_that_do_not_fit_name_row_group_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nulls = Float64Array::from(vec![Some(1.0), Some(2.0), None, Some(4.0), Some(5.0), None]);
    let label = Int64Array::from(vec![0, 1, 2, 0, 1, 7]);
    let path = write(
        d,
        "nulls.parquet",
        vec![("x", Arc::new(nulls.clone())), ("label", Arc::new(label))],
        4,
    );
    let file = path.display();
    let schema = Schema::new().float("x").int("label").label("label");
    assert_eq!(
        read_error(&path, schema.clone()),
        format!("{file}: row group 0, row 2: column x: null value and no default")
    );
    // With a default, as CSV's empty cells: read as it; then the class count bites.
    let defaulted = Schema::new()
        .float("x")
        .with_default("-1")
        .int("label")
        .label("label")
        .with_label_classes(3);
    let rows: Vec<_> = ParquetDataset::open(&path, defaulted.clone())
        .unwrap()
        .iter()
        .collect();
    assert_eq!(rows[2].as_ref().unwrap().dense, [-1.0]);
    assert_eq!(
        read_error(&path, defaulted),
        format!("{file}: row group 1, row 1: column label: label 7 is out of range for 3 classes")
    );

    let nan = Float64Array::from(vec![1.0, f64::NAN]);
    let big = Float64Array::from(vec![1.0, 1e300]);
    let negative = Int64Array::from(vec![0, -2]);
    let path = write(
        d,
        "values.parquet",
        vec![
            ("nan", Arc::new(nan)),
            ("nan32", Arc::new(Float32Array::from(vec![1.0, f32::NAN]))),
            ("big", Arc::new(big)),
            ("negative", Arc::new(negative)),
            ("s", Arc::new(StringArray::from(vec![Some("a"), None]))),
            ("u", Arc::new(UInt8Array::from(vec![1, 2]))),
        ],
        10,
    );
    let file = path.display();
    assert_eq!(
        read_error(&path, Schema::new().float("nan")),
        format!("{file}: row group 0, row 1: column nan: NaN is not a finite 32-bit float")
    );
    assert_eq!(
        read_error(&path, Schema::new().float("u").float("nan32")),
        format!("{file}: row group 0, row 1: column nan32: NaN is not a finite 32-bit float")
    );
    assert_eq!(
        read_error(&path, Schema::new().float("big")),
        format!("{file}: row group 0, row 1: column big: 1e300 is not a finite 32-bit float")
    );
    assert_eq!(
        read_error(&path, Schema::new().int("negative").label("negative")),
        format!(
            "{file}: row group 0, row 1: column negative: label -2 is not a class id (integer \
             >= 0)"
        )
    );
    assert_eq!(
        read_error(&path, Schema::new().category("s").label("s")),
        format!("{file}: row group 0, row 1: column s: null value and no default")
    );
    // Integers read as categories, in decimal.
    let rows: Vec<_> = collect(ParquetDataset::open(&path, Schema::new().category("u")).unwrap());
    assert_eq!(rows[1].categorical, ["2"]);
    // Types a column's kind cannot read are refused on opening.
    assert_eq!(
        read_error(&path, Schema::new().int("big")),
        format!(
            "{file}: column big: holds Float64 values, which cannot be read as int (give a \
             schema that reads it as float)"
        )
    );
    assert_eq!(
        read_error(&path, Schema::new().float("s")),
        format!(
            "{file}: column s: holds Utf8 values, which cannot be read as float (finite) (give \
             a schema that reads it as a category)"
        )
    );
}

#[test]
fn files_that_are_not_parquet_or_are_damaged_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = rows_file(d);
    let bytes = std::fs::read(&good).unwrap();
    let text = d.join("text.parquet");
    std::fs::write(&text, b"x,label\n1,0\n").unwrap();
    let cut = d.join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    for path in [&text, &cut] {
        let error = ParquetDataset::open(path, schema())
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "{}: not a readable Parquet file: ",
                path.display()
            )),
            "{error}"
        );
        assert!(infer_parquet_schema(path, None).is_err());
    }
    // Every byte of the data pages flipped in turn: a row or an error naming the file,
    // never a panic.
    let footer = bytes.len()
        - 8
        - u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let damaged = d.join("damaged.parquet");
    let mut errors = 0;
    for at in 4..footer {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x5A;
        std::fs::write(&damaged, &flipped).unwrap();
        let Ok(ds) = ParquetDataset::open(&damaged, schema()) else {
            errors += 1;
            continue;
        };
        for row in ds.into_iter_results() {
            if let Err(e) = row {
                assert!(
                    e.to_string().starts_with(&damaged.display().to_string()),
                    "{e}"
                );
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn the_first_bad_row_is_named_whichever_column_holds_it() {
    // Columns are decoded one after another: x's null (row 5) is met before y's (row 2),
    // yet row 2 is the one named, after rows 0 and 1, rows and batches alike.
    let dir = tempfile::tempdir().unwrap();
    let x = Float32Array::from(vec![
        Some(0.0),
        Some(1.0),
        Some(2.0),
        Some(3.0),
        Some(4.0),
        None,
    ]);
    let y = Float32Array::from(vec![
        Some(0.0),
        Some(1.0),
        None,
        Some(3.0),
        Some(4.0),
        Some(5.0),
    ]);
    let path = write(
        dir.path(),
        "two.parquet",
        vec![("x", Arc::new(x)), ("y", Arc::new(y))],
        4,
    );
    let schema = Schema::new().float("x").float("y");
    let expected = format!(
        "{}: row group 0, row 2: column y: null value and no default",
        path.display()
    );
    let mut rows = ParquetDataset::open(&path, schema.clone()).unwrap();
    let read: Vec<_> = rows.iter().collect();
    assert_eq!(read.len(), 3);
    assert_eq!(read[1].as_ref().unwrap().dense, [1.0, 1.0]);
    assert_eq!(read[2].as_ref().unwrap_err().to_string(), expected);
    assert_eq!(read_error(&path, schema), expected);
}
