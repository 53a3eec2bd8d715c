//! Schema inference from a Parquet file's own schema: its column types say it all, no rows
//! are read.

use std::path::Path;

use parquet::arrow::arrow_reader::ArrowReaderMetadata;

use super::file::{column_error, no_such_column, read_footer, twice, values_of, Values};
use crate::{open_regular, ColumnType, Error, Schema};

/// The schema of a Parquet file, from the types in its footer: every column, in file
/// order; floating-point columns `Float`; integer and boolean columns `Int`; text columns
/// (plain, large, view or dictionary-encoded) `Category`. The `label` column, which must
/// exist, is read by the same rule: class ids from integers, regression targets from
/// floats, class names from text. A column of another type (a date, a list, a struct,
/// binary) is an error naming it and its type: give a schema without it.
pub fn infer_parquet_schema(path: impl AsRef<Path>, label: Option<&str>) -> Result<Schema, Error> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let metadata = footer(path)?;
    let fields = metadata.schema().fields();
    if let Some(label) = label {
        if !fields.iter().any(|f| f.name() == label) {
            return Err(no_such_column(&file, label, fields));
        }
    }
    let mut schema = Schema::new();
    for (i, field) in fields.iter().enumerate() {
        // The schema's own check would say "appears twice" without the file or where.
        if let Some(first) = fields[..i].iter().position(|f| f.name() == field.name()) {
            return Err(twice(&file, field.name(), first, i));
        }
        let kind = match values_of(field.data_type()) {
            Some(Values::Float) => ColumnType::Float,
            Some(Values::Integer | Values::Boolean) => ColumnType::Int,
            Some(Values::Text) => ColumnType::Category,
            None => {
                return Err(column_error(
                    &file,
                    field.name(),
                    format!(
                        "holds {} values, which no column type reads: give a schema \
                         without it",
                        field.data_type()
                    ),
                ))
            }
        };
        schema = schema.add(field.name().clone(), kind);
    }
    if let Some(label) = label {
        schema = schema.label(label);
    }
    schema.validate()?;
    Ok(schema)
}

/// The names of a Parquet file's columns, in file order, whatever their types.
pub fn parquet_column_names(path: impl AsRef<Path>) -> Result<Vec<String>, Error> {
    let metadata = footer(path.as_ref())?;
    Ok(metadata
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect())
}

/// The footer of the Parquet file at `path` (a regular file).
fn footer(path: &Path) -> Result<ArrowReaderMetadata, Error> {
    let handle = open_regular(path)?;
    read_footer(&handle, &path.display().to_string())
}
