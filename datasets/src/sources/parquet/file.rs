//! [`ParquetFile`]: a Parquet file opened for a schema: its footer read once, the columns the
//! schema needs found and checked against their types, and readers of its row groups.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Fields};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use super::columns::{ColumnPlan, Layout, Target};
use crate::sources::cell;
use crate::{open_regular, ColumnType, Error, Schema};

/// A Parquet file and how the columns of a schema are read from it.
pub(crate) struct ParquetFile {
    pub(crate) path: PathBuf,
    /// The path as errors name it.
    pub(crate) name: String,
    handle: File,
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    /// Rows of each row group.
    pub(crate) row_groups: Vec<u64>,
    /// Where each value of a row goes.
    pub(crate) layout: Layout,
}

/// What kind of values an Arrow type holds, for the schema's column kinds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Values {
    Float,
    Integer,
    Boolean,
    Text,
}

/// The kind of values `data_type` holds; `None` for types no column kind reads (dates,
/// lists, structs, binary).
pub(crate) fn values_of(data_type: &DataType) -> Option<Values> {
    Some(match data_type {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => Values::Float,
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => Values::Integer,
        DataType::Boolean => Values::Boolean,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Values::Text,
        DataType::Dictionary(key, value) if key.is_dictionary_key_type() => {
            match values_of(value)? {
                Values::Text => Values::Text,
                _ => return None,
            }
        }
        _ => return None,
    })
}

impl ParquetFile {
    /// Opens `path` (a regular file), reads its footer, and finds the columns of `schema`.
    pub(crate) fn open(path: &Path, schema: &Schema) -> Result<Self, Error> {
        schema.validate()?;
        let name = path.display().to_string();
        let handle = open_regular(path)?;
        let metadata = read_footer(&handle, &name)?;
        let fields = metadata.schema().fields().clone();
        let mut wanted = Vec::with_capacity(schema.columns.len());
        for column in &schema.columns {
            let mut matches = (fields.iter().enumerate()).filter(|(_, f)| f.name() == &column.name);
            let Some((index, _)) = matches.next() else {
                return Err(no_such_column(&name, &column.name, &fields));
            };
            // Arrow schemas allow a name twice; reading the first would be a silent guess.
            if let Some((second, _)) = matches.next() {
                return Err(twice(&name, &column.name, index, second));
            }
            wanted.push(index);
        }
        // The reader yields the projected columns in file order.
        let mut projected = wanted.clone();
        projected.sort_unstable();
        projected.dedup();
        let (mut dense, mut categorical) = (0, 0);
        let mut plans = Vec::with_capacity(schema.columns.len());
        for (column, &index) in schema.columns.iter().zip(&wanted) {
            let data_type = fields[index].data_type();
            let is_label = schema.label.as_deref() == Some(column.name.as_str());
            let target = match (column.kind, is_label) {
                (ColumnType::Float | ColumnType::Int, false) => Target::Dense,
                (ColumnType::Category, false) => Target::Categorical(categorical),
                (ColumnType::Float, true) => Target::LabelFloat,
                (ColumnType::Int, true) => Target::LabelClass(schema.label_classes),
                (ColumnType::Category, true) => Target::LabelName,
            };
            match target {
                Target::Dense => dense += 1,
                Target::Categorical(_) => categorical += 1,
                _ => {}
            }
            let values = values_of(data_type);
            let readable = match (values, column.kind) {
                (None, _) => false,
                (Some(Values::Text), kind) => kind == ColumnType::Category,
                (Some(Values::Float), kind) => kind == ColumnType::Float,
                (Some(Values::Integer), _) => true,
                (Some(Values::Boolean), kind) => kind != ColumnType::Category,
            };
            if !readable {
                let message = format!(
                    "holds {data_type} values, which cannot be read as {} (give a schema that \
                     reads it as {})",
                    cell::expected_name(column.kind, is_label),
                    match values {
                        Some(Values::Text) => "a category",
                        Some(Values::Float) => "float",
                        _ => "another type, or leave it out",
                    }
                );
                return Err(column_error(&name, &column.name, message));
            }
            plans.push(ColumnPlan {
                name: column.name.clone(),
                batch_index: projected.binary_search(&index).unwrap_or_default(),
                target,
                default: column.default.clone(),
            });
        }
        let mask = ProjectionMask::roots(metadata.parquet_schema(), projected.iter().copied());
        let row_groups = row_counts(&metadata, &name)?;
        let label = plans.iter().find_map(|p| p.target.label_kind());
        let dense_plans = (plans.iter().enumerate())
            .filter(|(_, p)| matches!(p.target, Target::Dense))
            .map(|(i, _)| i)
            .collect();
        Ok(ParquetFile {
            path: path.to_path_buf(),
            name,
            handle,
            metadata,
            mask,
            row_groups,
            layout: Layout {
                columns: plans,
                dense_plans,
                dense,
                categorical,
                label,
            },
        })
    }

    /// Rows of every row group.
    pub(crate) fn rows(&self) -> u64 {
        self.row_groups.iter().sum()
    }

    /// A reader of the schema's columns of row group `group`, from its row `row` on, in
    /// chunks of `chunk` rows.
    pub(crate) fn reader(
        &self,
        group: usize,
        row: u64,
        chunk: usize,
    ) -> Result<ParquetRecordBatchReader, Error> {
        let handle = (self.handle.try_clone()).map_err(|e| Error::io(&self.path, e))?;
        let mut builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(handle, self.metadata.clone())
                .with_projection(self.mask.clone())
                .with_row_groups(vec![group])
                .with_batch_size(chunk.max(1));
        if row > 0 {
            builder = builder.with_offset(usize::try_from(row).unwrap_or(usize::MAX));
        }
        builder
            .build()
            .map_err(|e| file_error(&self.name, Some(group), e.to_string()))
    }

    /// An [`Error::Parquet`] about row group `group`.
    pub(crate) fn error(&self, group: usize, message: impl Into<String>) -> Error {
        file_error(&self.name, Some(group), message.into())
    }
}

/// The footer of the Parquet file open as `handle`, named `name` in errors.
pub(super) fn read_footer(handle: &File, name: &str) -> Result<ArrowReaderMetadata, Error> {
    ArrowReaderMetadata::load(handle, ArrowReaderOptions::new())
        .map_err(|e| file_error(name, None, format!("not a readable Parquet file: {e}")))
}

/// Rows of each row group, as the footer says. The footer's counts are i64 and the file's
/// rows are added up as u64 (its length, a position's rows before it): a negative count, or
/// counts that add up beyond u64, is an error naming the row group, rather than a group
/// skipped or a sum that overflows.
fn row_counts(metadata: &ArrowReaderMetadata, name: &str) -> Result<Vec<u64>, Error> {
    let groups = metadata.metadata().row_groups();
    let mut total = 0u64;
    let mut counts = Vec::with_capacity(groups.len());
    for (group, g) in groups.iter().enumerate() {
        let Ok(rows) = u64::try_from(g.num_rows()) else {
            let message = format!("the footer says it holds {} rows", g.num_rows());
            return Err(file_error(name, Some(group), message));
        };
        let Some(sum) = total.checked_add(rows) else {
            let message = format!(
                "the footer says it holds {rows} rows, which with the {total} rows before it \
                 are more than {} in all",
                u64::MAX
            );
            return Err(file_error(name, Some(group), message));
        };
        total = sum;
        counts.push(rows);
    }
    Ok(counts)
}

/// An [`Error::Parquet`] about the file, or one of its row groups.
fn file_error(file: &str, row_group: Option<usize>, message: String) -> Error {
    Error::Parquet {
        file: file.to_string(),
        row_group,
        row: None,
        column: None,
        message,
    }
}

/// An [`Error::Parquet`] about column `column` of the file.
pub(super) fn column_error(file: &str, column: &str, message: String) -> Error {
    Error::Parquet {
        file: file.to_string(),
        row_group: None,
        row: None,
        column: Some(column.to_string()),
        message,
    }
}

/// The error for a column the file lacks, naming those it has.
pub(super) fn no_such_column(file: &str, column: &str, fields: &Fields) -> Error {
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let message = format!(
        "the file has no such column (its columns: {})",
        names.join(", ")
    );
    column_error(file, column, message)
}

/// The error for a column name the file holds at `first` and `second` (from 0, as pyarrow's
/// `schema.field(i)` counts).
pub(super) fn twice(file: &str, column: &str, first: usize, second: usize) -> Error {
    let message = format!(
        "the file has two columns of this name (columns {first} and {second}, from 0): \
         which one to read is ambiguous"
    );
    column_error(file, column, message)
}
