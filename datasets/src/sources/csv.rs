//! CSV source: [`CsvDataset`], reading [`Example`]s through a [`Schema`].

mod options;
mod row;

use std::path::{Path, PathBuf};

use super::cell;
use super::reader::RecordReader;
use crate::{ColumnType, Dataset, Error, Example, Position, Schema};
use row::{RowParser, Slot, Target};

pub use options::{BadRowPolicy, CsvOptions, RowCounter};

/// Rows of a CSV file (plain or gzip) with a header, as [`Example`]s laid out by a
/// [`Schema`].
///
/// A file is gzip if its name ends in `.gz` or it starts with the gzip magic bytes. Blank
/// lines are skipped; quoting follows RFC 4180 (quoted fields may hold delimiters, `""`
/// and newlines). Errors name the file, the line (the header is line 1) and the column:
/// `iris.csv:17: column petal_width: cannot parse 'abc' as float`. The position is the
/// number of records read plus the byte offset of the next one; restoring seeks a plain
/// file and re-reads a gzip one up to that record.
pub struct CsvDataset {
    path: PathBuf,
    file: String,
    schema: Schema,
    options: CsvOptions,
    header: Vec<String>,
    slots: Vec<Slot>,
    /// For each field of the file, the slot reading it.
    by_field: Vec<Option<usize>>,
    num_dense: usize,
    num_categorical: usize,
    reader: RecordReader,
    records: u64,
    skipped: RowCounter,
    failed: bool,
}

/// Opens `path` and reads its header row (names trimmed).
pub(crate) fn open_reader(
    path: &Path,
    delimiter: u8,
) -> Result<(RecordReader, Vec<String>), Error> {
    let mut reader = RecordReader::open(path, delimiter).map_err(|e| Error::io(path, e))?;
    let header = match reader.next_record().map_err(|e| Error::io(path, e))? {
        Some((_, record)) => record
            .fields(delimiter)
            .into_iter()
            .map(cell::parse_category)
            .collect(),
        None => Vec::new(),
    };
    Ok((reader, header))
}

impl CsvDataset {
    /// Opens `path` (plain or gzip CSV with a header row) and checks the header against
    /// `schema`. Bad rows are errors; see [`CsvDataset::open_with`] for other options.
    pub fn open(path: impl AsRef<Path>, schema: Schema) -> Result<Self, Error> {
        CsvDataset::open_with(path, schema, CsvOptions::default())
    }

    /// Like [`CsvDataset::open`], with a delimiter and a bad-row policy.
    pub fn open_with(
        path: impl AsRef<Path>,
        schema: Schema,
        options: CsvOptions,
    ) -> Result<Self, Error> {
        schema.validate()?;
        let path = path.as_ref().to_path_buf();
        let file = path.display().to_string();
        let (reader, header) = open_reader(&path, options.delimiter)?;
        let mut slots = Vec::with_capacity(schema.columns.len());
        let mut by_field = vec![None; header.len()];
        let (mut dense, mut categorical) = (0, 0);
        for (column, c) in schema.columns.iter().enumerate() {
            let Some(field) = header.iter().position(|h| *h == c.name) else {
                return Err(Error::MissingColumn {
                    file,
                    column: c.name.clone(),
                    header: header.join(","),
                });
            };
            let is_label = schema.label.as_deref() == Some(c.name.as_str());
            let (target, out) = match (c.kind, is_label) {
                (ColumnType::Float, false) => (Target::DenseFloat, dense),
                (ColumnType::Int, false) => (Target::DenseInt, dense),
                (ColumnType::Category, false) => (Target::Categorical, categorical),
                (ColumnType::Float, true) => (Target::LabelFloat, 0),
                (ColumnType::Int, true) => (Target::LabelClass, 0),
                (ColumnType::Category, true) => (Target::LabelName, 0),
            };
            match target {
                Target::DenseFloat | Target::DenseInt => dense += 1,
                Target::Categorical => categorical += 1,
                _ => {}
            }
            by_field[field] = Some(slots.len());
            slots.push(Slot {
                column,
                out,
                target,
                default: c.default.as_ref().map(|d| d.as_bytes().into()),
            });
        }
        Ok(CsvDataset {
            num_dense: dense,
            num_categorical: categorical,
            path,
            file,
            schema,
            options,
            header,
            slots,
            by_field,
            reader,
            records: 0,
            skipped: RowCounter::default(),
            failed: false,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema the rows are read with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The file's header (column names, in file order).
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Data records read so far, bad ones included.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// Rows skipped so far under [`BadRowPolicy::Skip`].
    pub fn skipped_rows(&self) -> u64 {
        self.skipped.get()
    }

    /// A handle on the skipped-rows count that stays readable after the dataset has been
    /// moved into a pipeline.
    pub fn skipped_counter(&self) -> RowCounter {
        self.skipped.clone()
    }
}

impl Dataset for CsvDataset {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        let parser = RowParser {
            file: &self.file,
            schema: &self.schema,
            slots: &self.slots,
            by_field: &self.by_field,
            fields: self.header.len(),
            num_dense: self.num_dense,
            num_categorical: self.num_categorical,
            delimiter: self.options.delimiter,
        };
        loop {
            if self.failed {
                return None;
            }
            let (line, record) = match self.reader.next_record() {
                Ok(Some(next)) => next,
                Ok(None) => return None,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(Error::io(&self.path, e)));
                }
            };
            self.records += 1;
            match parser.parse(&record, line) {
                Ok(example) => return Some(Ok(example)),
                Err(e) if self.options.bad_rows == BadRowPolicy::Fail => return Some(Err(e)),
                Err(_) => self.skipped.increment(),
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        let (byte, line) = self.reader.position();
        Position::Csv {
            record: self.records,
            byte,
            line,
            skipped: self.skipped.get(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Csv {
            record,
            byte,
            line,
            skipped,
        } = *position
        else {
            return Err(Error::position_mismatch("csv", position));
        };
        let changed = |what: &str| {
            Error::Position(format!(
                "{}: {what}; has the file changed since the position was taken?",
                self.file
            ))
        };
        if !self.reader.is_gzip() {
            let len = std::fs::metadata(&self.path)
                .map_err(|e| Error::io(&self.path, e))?
                .len();
            if byte > len {
                return Err(changed(&format!(
                    "byte {byte} is past the end ({len} bytes)"
                )));
            }
            self.reader
                .seek(byte, line)
                .map_err(|e| Error::io(&self.path, e))?;
        } else {
            let (mut reader, header) = open_reader(&self.path, self.options.delimiter)?;
            if header != self.header {
                return Err(changed("the header differs"));
            }
            for _ in 0..record {
                match reader.next_record() {
                    Ok(Some(_)) => {}
                    Ok(None) => return Err(changed(&format!("fewer than {record} records"))),
                    Err(e) => return Err(Error::io(&self.path, e)),
                }
            }
            if reader.position().0 != byte {
                return Err(changed(&format!(
                    "record {record} does not start at byte {byte}"
                )));
            }
            self.reader = reader;
        }
        self.records = record;
        self.skipped.set(skipped);
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
