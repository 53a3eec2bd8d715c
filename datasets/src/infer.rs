//! Schema inference from a CSV file's header and first rows.

use std::path::Path;

use crate::sources::cell;
use crate::sources::csv::open_reader;
use crate::{ColumnType, CsvOptions, Error, Schema};

#[derive(Clone, Copy)]
struct Seen {
    values: usize,
    floats: usize,
    classes: usize,
}

/// Infers a schema from the header and the first `max_rows` rows of a CSV file (plain or
/// gzip), comma-delimited. See [`infer_schema_with`].
pub fn infer_schema(
    path: impl AsRef<Path>,
    label: Option<&str>,
    max_rows: usize,
) -> Result<Schema, Error> {
    infer_schema_with(path, label, max_rows, &CsvOptions::default())
}

/// Infers a schema from the header and the first `max_rows` rows of a CSV file.
///
/// Every column is kept, in file order. A feature column is `Float` if all its non-empty
/// cells parse as numbers, else `Category`. The `label` column (which must exist) is
/// `Int` (class ids) if all its cells are non-negative integers, `Float` if all are
/// numbers, else `Category` (class names). Columns with no values in the sample are
/// `Category`. No defaults are set: give numeric columns with empty cells one with
/// [`Schema::with_default`] or by editing [`Schema::columns`].
pub fn infer_schema_with(
    path: impl AsRef<Path>,
    label: Option<&str>,
    max_rows: usize,
    options: &CsvOptions,
) -> Result<Schema, Error> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let (mut reader, header) = open_reader(path, options.delimiter)?;
    if let Some(label) = label {
        if !header.iter().any(|h| h == label) {
            return Err(Error::MissingColumn {
                file,
                column: label.to_string(),
                header: header.join(","),
            });
        }
    }
    let mut seen = vec![
        Seen {
            values: 0,
            floats: 0,
            classes: 0,
        };
        header.len()
    ];
    for _ in 0..max_rows {
        let record = match reader.next_record() {
            Ok(Some((_, record))) => record,
            Ok(None) => break,
            Err(e) => return Err(Error::io(path, e)),
        };
        for (s, field) in seen.iter_mut().zip(record.fields(options.delimiter)) {
            if cell::trim(field).is_empty() {
                continue;
            }
            s.values += 1;
            s.floats += usize::from(cell::parse_f32(field).is_some());
            s.classes += usize::from(cell::parse_class(field).is_some());
        }
    }
    let mut schema = Schema::new();
    for (name, s) in header.iter().zip(&seen) {
        let is_label = label == Some(name.as_str());
        let kind = if s.values == 0 {
            ColumnType::Category
        } else if is_label && s.classes == s.values {
            ColumnType::Int
        } else if s.floats == s.values {
            ColumnType::Float
        } else {
            ColumnType::Category
        };
        schema = schema.add(name.clone(), kind);
    }
    if let Some(label) = label {
        schema = schema.label(label);
    }
    schema.validate()?;
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CsvDataset, Dataset, Label};

    #[test]
    fn infers_types_and_label() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        std::fs::write(
            &path,
            "a,b,c,empty,species,target\n1,2.5,red,,0,1.5\n3,,blue,,2,2\n-4,1e3,7,,1,3\n",
        )
        .unwrap();
        let s = infer_schema(&path, Some("species"), 100).unwrap();
        let kinds: Vec<ColumnType> = s.columns.iter().map(|c| c.kind).collect();
        use ColumnType::*;
        assert_eq!(kinds, [Float, Float, Category, Category, Int, Float]);
        assert_eq!(s.label.as_deref(), Some("species"));
        let t = infer_schema(&path, Some("target"), 100).unwrap();
        assert_eq!(t.label_column().unwrap().kind, Float);
        let c = infer_schema(&path, Some("c"), 100).unwrap();
        assert_eq!(c.label_column().unwrap().kind, Category);
        // Only the sampled rows count: in the first row alone, `b` is a number.
        let first = infer_schema(&path, None, 1).unwrap();
        assert_eq!(first.get("b").unwrap().kind, Float);
        assert_eq!(first.label, None);
        // The inferred schema reads the file (b has an empty cell: give it a default).
        let mut schema = s.clone();
        schema.columns[1].default = Some("0".into());
        schema.columns[3].kind = Category;
        let mut ds = CsvDataset::open(&path, schema).unwrap();
        let ex = ds.next_item().unwrap().unwrap();
        assert_eq!(ex.label, Label::Class(0));
        assert_eq!(ex.dense, vec![1.0, 2.5, 1.5]);
    }

    #[test]
    fn missing_label_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        std::fs::write(&path, "a,b\n1,2\n").unwrap();
        let err = infer_schema(&path, Some("y"), 10).unwrap_err();
        assert!(err.to_string().contains("header has no column 'y'"));
    }
}
