//! Schema inference from a CSV file's header and first rows.

use std::path::Path;

use crate::sources::csv::open_reader;
use crate::sources::{cell, text};
use crate::{ColumnType, CsvOptions, Error, Schema};

#[derive(Clone, Default)]
struct Seen {
    values: usize,
    floats: usize,
    classes: usize,
    /// The first number's line.
    first_float: Option<u64>,
    /// The first cell that is not a number: its line and text.
    first_text: Option<(u64, String)>,
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
/// cells parse as finite numbers, `Category` if none does; a column with both is an error
/// naming the first cell that is not a number (a typo must not turn a numeric column into
/// a categorical one silently): give a schema to read such a column as a category. The `label` column (which must exist) is
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
    if let Some((i, name)) = header
        .iter()
        .enumerate()
        .find(|(i, name)| header[..*i].contains(name))
    {
        let first = header.iter().position(|h| h == name).unwrap_or(0) + 1;
        return Err(Error::Format {
            message: format!(
                "line 1: the header names column '{name}' twice (fields {first} and {})",
                i + 1
            ),
            file,
        });
    }
    let mut seen = vec![Seen::default(); header.len()];
    for _ in 0..max_rows {
        let (line, record) = match reader.next_record() {
            Ok(Some(line_and_record)) => line_and_record,
            Ok(None) => break,
            Err(e) => return Err(e),
        };
        let fields = record.fields(options.delimiter);
        for (i, (s, field)) in seen.iter_mut().zip(fields).enumerate() {
            if cell::trim(field).is_empty() {
                continue;
            }
            s.values += 1;
            if cell::parse_f32(field).is_some() {
                s.floats += 1;
                s.first_float.get_or_insert(line);
            } else {
                // Text in another encoding would be read as categories that are not the
                // file's: refused here, at its line, before any row is read.
                text::utf8(cell::trim(field), &file, line, Some(&header[i]), i + 1)?;
                if s.first_text.is_none() {
                    s.first_text = Some((line, crate::error::excerpt(field)));
                }
            }
            s.classes += usize::from(cell::parse_class(field).is_some());
        }
    }
    let mut schema = Schema::new();
    for (name, s) in header.iter().zip(&seen) {
        if let (Some(numeric_line), Some((line, value))) = (s.first_float, &s.first_text) {
            return Err(Error::MixedColumn {
                file,
                line: *line,
                column: name.clone(),
                value: value.clone(),
                numeric_line,
            });
        }
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
            "a,b,c,empty,species,target\n1,2.5,red,,0,1.5\n3,,blue,,2,2\n-4,1e3,green,,1,3\n",
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
    fn a_cell_that_is_not_a_number_in_a_numeric_column_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        std::fs::write(&path, "a,b,y\n1,2,0\n3,4,1\n5,abc,0\n7,nan,1\n").unwrap();
        let err = infer_schema(&path, Some("y"), 100).unwrap_err().to_string();
        let want = format!(
            "{}:4: column b: 'abc' is not a finite number, but the column holds numbers \
             (line 2); fix the cell, or give a schema that makes the column a category",
            path.display()
        );
        assert_eq!(err, want);
        // A schema that says the column is a category reads it.
        let schema = Schema::new().float("a").category("b").int("y").label("y");
        let mut ds = CsvDataset::open(&path, schema).unwrap();
        let mut rows = 0;
        while let Some(row) = ds.next_item() {
            row.unwrap();
            rows += 1;
        }
        assert_eq!(rows, 4);
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
