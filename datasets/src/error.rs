//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong while opening or reading a dataset.
///
/// Messages are one line and name the file, line and column where there is one, e.g.
/// `iris.csv:17: column petal_width: cannot parse 'abc' as float (finite)`. Line numbers count
/// the header row as line 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening or reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },

    /// A cell could not be parsed as its column's type.
    #[error("{file}:{line}: column {column}: cannot parse '{value}' as {expected}")]
    Parse {
        /// The file, as given when it was opened.
        file: String,
        /// 1-based line of the record (the header is line 1).
        line: u64,
        /// Column name.
        column: String,
        /// The offending text (cut to 40 characters).
        value: String,
        /// What was expected: `float`, `int`, `class id`.
        expected: &'static str,
    },

    /// Schema inference found a column numeric in most rows and text in one.
    #[error(
        "{file}:{line}: column {column}: '{value}' is not a finite number, but the column holds \
         numbers (line {numeric_line}); fix the cell, or give a schema that makes the column \
         a category"
    )]
    MixedColumn {
        /// The file.
        file: String,
        /// 1-based line of the first cell that is not a number.
        line: u64,
        /// Column name.
        column: String,
        /// The offending text (cut to 40 characters).
        value: String,
        /// 1-based line of the first number in the column.
        numeric_line: u64,
    },

    /// A class id not below the schema's number of classes.
    #[error("{file}:{line}: column {column}: label {label} is out of range for {classes} classes")]
    LabelOutOfRange {
        /// The file.
        file: String,
        /// 1-based line of the record.
        line: u64,
        /// The label column.
        column: String,
        /// The class id read.
        label: u32,
        /// The schema's number of classes.
        classes: u32,
    },

    /// An empty cell in a column that has no default.
    #[error("{file}:{line}: column {column}: empty value and no default")]
    EmptyValue {
        /// The file.
        file: String,
        /// 1-based line of the record.
        line: u64,
        /// Column name.
        column: String,
    },

    /// A record with a different number of fields than the header.
    #[error("{file}:{line}: expected {expected} fields as in the header, found {found}")]
    RaggedRow {
        /// The file.
        file: String,
        /// 1-based line of the record.
        line: u64,
        /// Fields in the header.
        expected: usize,
        /// Fields in this record.
        found: usize,
    },

    /// A schema column that the file's header lacks.
    #[error("{file}: header has no column '{column}' (header: {header})")]
    MissingColumn {
        /// The file.
        file: String,
        /// The missing column.
        column: String,
        /// The header, comma-separated.
        header: String,
    },

    /// A path that is not a regular file (a directory, a device, a FIFO, a socket): reading
    /// one could block for ever or never end.
    #[error("{} is {kind}, not a regular file", path.display())]
    NotRegularFile {
        /// The path, as given.
        path: PathBuf,
        /// What it is instead: `a directory`, `a character device`, `a FIFO (named pipe)`, ...
        kind: &'static str,
    },

    /// A CSV field (or header name) that is not UTF-8: decoding it with replacement
    /// characters would merge distinct values into one.
    #[error(
        "{file}:{line}: {} is not valid UTF-8: byte 0x{byte:02X} at offset {offset} of '{value}'; \
         the file looks like Latin-1/Windows-1252 or another 8-bit encoding: re-encode it as UTF-8",
        describe_field(.column.as_deref(), *.field)
    )]
    NotUtf8 {
        /// The file.
        file: String,
        /// 1-based line of the record (the header is line 1).
        line: u64,
        /// The column's name; `None` for a header field (its name is what cannot be read).
        column: Option<String>,
        /// 1-based position of the field in the record.
        field: usize,
        /// The first byte that is not UTF-8.
        byte: u8,
        /// Its offset in the field.
        offset: usize,
        /// The field, invalid bytes replaced (cut to 40 characters).
        value: String,
    },

    /// A record that runs past the length limit without ending: a file with no line ends,
    /// a quote never closed, or not a CSV file at all.
    #[error(
        "{file}:{line}: record runs past {} without ending (no line end, or a quote never \
         closed)",
        size(*.limit)
    )]
    RecordTooLong {
        /// The file.
        file: String,
        /// 1-based line the record starts on.
        line: u64,
        /// The limit, in bytes.
        limit: usize,
    },

    /// A file whose contents do not match its format (an IDX file, a CSV header).
    #[error("{file}: {message}")]
    Format {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },

    /// A TFRecord record that cannot be read (a CRC that does not match, a file that ends
    /// inside it, a corrupt compressed stream) or whose tf.Example does not fit the feature
    /// spec (a missing feature, another data type, another number of values).
    #[error(
        "{file}: record {record} (byte {offset}{}): {message}",
        stream_of(.compression)
    )]
    Record {
        /// The file.
        file: String,
        /// 1-based number of the record in its file.
        record: u64,
        /// Byte offset of the record's start: in the file, or in the decompressed stream
        /// of a compressed one.
        offset: u64,
        /// `""` for a plain file, else the compression (`GZIP`, `ZLIB`): `offset` counts
        /// decompressed bytes.
        compression: &'static str,
        /// What is wrong, naming the feature where there is one.
        message: String,
    },

    /// A Parquet file that cannot be read (not Parquet, a damaged page or footer, a codec
    /// this build lacks) or whose values do not fit the schema (a null without a default,
    /// a type the column's kind cannot take, a non-finite float). Row groups and rows count
    /// from 0, as pyarrow's `read_row_group(i)` and its rows do.
    #[error("{file}: {}{message}", parquet_place(*.row_group, *.row, .column.as_deref()))]
    Parquet {
        /// The file.
        file: String,
        /// The row group, when the error is in one.
        row_group: Option<usize>,
        /// The row of that row group, when the error is about one.
        row: Option<u64>,
        /// The column, when the error is about one.
        column: Option<String>,
        /// What is wrong.
        message: String,
    },

    /// A feature spec that cannot work (a label that is not a one-value feature, a default
    /// of another type or size, a data type a kind of feature cannot hold).
    #[error("feature spec: {0}")]
    FeatureSpec(String),

    /// A schema that cannot work (duplicate column, unknown label, bad default).
    #[error("schema: {0}")]
    Schema(String),

    /// Rows or columns that do not fit together: a row whose number of dense or
    /// categorical values, or kind of label, differs from the rows batched or cached
    /// before it; a columnar batch whose columns have different lengths.
    #[error("{stage}: {message}")]
    Layout {
        /// Where: `batch_columnar`, `cache_table`, `ColumnarBatch::from_examples`, ...
        stage: &'static str,
        /// What does not fit, naming the row and the field.
        message: String,
    },

    /// A combinator built with arguments that cannot work (`shard(0, 0)`, `batch(0, _)`).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A position that does not fit the pipeline it is restored into.
    #[error("cannot restore position: {0}")]
    Position(String),

    /// The prefetch worker thread panicked (a panicking `map` closure, for instance).
    #[error("prefetch worker thread panicked: {0}")]
    WorkerPanicked(String),

    /// The function of a `map_parallel` stage panicked on an item.
    #[error("map_parallel function panicked: {0}")]
    MapPanicked(String),

    /// An error raised by user code, e.g. in a `try_map` closure.
    #[error("{0}")]
    Custom(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// How a [`Error::NotUtf8`] message names its field.
fn describe_field(column: Option<&str>, field: usize) -> String {
    match column {
        Some(name) => format!("field '{name}' (column {field})"),
        None => format!("header field {field}"),
    }
}

/// Where in a Parquet file an [`Error::Parquet`] is, before its message.
fn parquet_place(row_group: Option<usize>, row: Option<u64>, column: Option<&str>) -> String {
    let mut place = String::new();
    if let Some(group) = row_group {
        place.push_str(&format!("row group {group}"));
        if let Some(row) = row {
            place.push_str(&format!(", row {row}"));
        }
        place.push_str(": ");
    }
    if let Some(column) = column {
        place.push_str(&format!("column {column}: "));
    }
    place
}

/// Where a [`Error::Record`]'s offset counts from, after the number.
fn stream_of(compression: &str) -> String {
    if compression.is_empty() {
        String::new()
    } else {
        format!(" of the {compression}-decompressed stream")
    }
}

/// A length in bytes, in MiB when it is a whole number of them.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The message a panic was raised with (a thread's or a closure's), for the error that
/// reports it.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Cuts `bytes` to at most 40 characters of (lossy) text for an error message.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text.chars().take(40).collect();
    if text.chars().count() > 40 {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_message_names_file_line_and_column() {
        let e = Error::Parse {
            file: "iris.csv".into(),
            line: 17,
            column: "petal_width".into(),
            value: "abc".into(),
            expected: "float (finite)",
        };
        assert_eq!(
            e.to_string(),
            "iris.csv:17: column petal_width: cannot parse 'abc' as float (finite)"
        );
    }

    #[test]
    fn excerpt_is_cut() {
        assert_eq!(excerpt(b"abc"), "abc");
        let long = vec![b'x'; 100];
        assert_eq!(excerpt(&long).len(), 43);
    }

    #[test]
    fn error_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }
}
