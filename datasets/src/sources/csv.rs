//! CSV source: [`CsvDataset`], reading [`Example`]s through a [`Schema`].

mod chunks;
mod file;
mod options;
mod parallel;
mod row;

use std::path::Path;
use std::sync::Arc;

use super::reader::CsvRecordReader;
use crate::{ColumnType, Dataset, Error, Example, ParallelCalls, Position, Schema};
use file::CsvFile;
use parallel::ParallelParse;
use row::{RowParser, Slot, Target};

pub(crate) use file::open_reader;
pub use options::{BadRowPolicy, CsvOptions, RowCounter};

/// Rows of a CSV file (plain or gzip) with a header, as [`Example`]s laid out by a
/// [`Schema`].
///
/// A file is gzip if its name ends in `.gz` or it starts with the gzip magic bytes. Blank
/// lines are skipped; quoting follows RFC 4180 (quoted fields may hold delimiters, `""`
/// and newlines; a file that ends inside one is an error, as a cut-off file). Only a
/// regular file (or a symlink to one) is opened: a device, a FIFO or a directory is an
/// error. Text is UTF-8, a leading byte-order mark skipped; a header name
/// or a value read that is not UTF-8 is an error at its line and column, and a file that
/// starts as UTF-16, UTF-32 or binary data (NUL bytes) is refused on opening. A record
/// longer than 64 MiB is an error at the line it starts on. Errors name the file, the line (the header is line 1) and the column:
/// `iris.csv:17: column petal_width: cannot parse 'abc' as float (finite)`. The position is the
/// number of records read plus the byte offset of the next one; restoring seeks a plain
/// file and re-reads a gzip one up to that record.
///
/// Parsing runs on the caller's thread unless
/// [`with_parse_threads`](CsvDataset::with_parse_threads) splits it across threads;
/// rows, errors and positions are the same either way.
pub struct CsvDataset {
    origin: CsvFile,
    parser: Arc<RowParser>,
    options: CsvOptions,
    engine: Engine,
    records: u64,
    skipped: RowCounter,
    failed: bool,
}

/// Who turns records into examples.
// One per dataset, so the size of the serial variant costs nothing; boxing it would add
// an indirection per record.
#[allow(clippy::large_enum_variant)]
enum Engine {
    /// The caller's thread, record by record.
    Serial(CsvRecordReader),
    /// Worker threads, a chunk of records at a time.
    Parallel(Box<ParallelParse>),
}

/// What the engine read next: a row (or the row's error), or an error that ends the file.
type Next = Result<Result<Example, Error>, Error>;

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
            // Which of two same-named fields the column means cannot be told.
            if let Some(again) = header[field + 1..].iter().position(|h| *h == c.name) {
                return Err(Error::Format {
                    file,
                    message: format!(
                        "line 1: the header names column '{}' twice (fields {} and {})",
                        c.name,
                        field + 1,
                        field + again + 2
                    ),
                });
            }
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
                field: field + 1,
                out,
                target,
                default: c.default.as_ref().map(|d| d.as_bytes().into()),
            });
        }
        let parser = RowParser {
            file: file.clone(),
            schema,
            slots,
            by_field,
            fields: header.len(),
            num_dense: dense,
            num_categorical: categorical,
            delimiter: options.delimiter,
        };
        Ok(CsvDataset {
            origin: CsvFile {
                path,
                file,
                header,
                delimiter: options.delimiter,
            },
            parser: Arc::new(parser),
            options,
            engine: Engine::Serial(reader),
            records: 0,
            skipped: RowCounter::default(),
            failed: false,
        })
    }

    /// Splits parsing across `calls` worker threads ([`ParallelCalls::Autotune`]: one
    /// per core), as `tf.data` parallelises `map`.
    ///
    /// The caller's thread still reads the file and finds where each record ends (quoted
    /// fields may hold newlines), and hands records to the workers in chunks of about
    /// 64 KiB; the workers convert the fields (number parsing is most of the cost). Rows
    /// come out in file order with the same errors, bad-row handling and per-row
    /// positions as single-threaded parsing, so a checkpoint taken either way resumes
    /// either way. Threads start on the first pull; `Fixed(0)` is an error then.
    ///
    /// ```
    /// use datasets::{bundled, CsvDataset, Dataset, DatasetExt, ParallelCalls};
    ///
    /// let path = bundled::iris_train_path();
    /// let open = || CsvDataset::open(&path, bundled::iris_schema());
    /// let serial: Vec<_> = open()?.iter().collect::<Result<_, _>>()?;
    /// let mut threaded = open()?.with_parse_threads(ParallelCalls::Fixed(2));
    /// let parallel: Vec<_> = threaded.iter().collect::<Result<_, _>>()?;
    /// assert_eq!(parallel, serial);
    /// # Ok::<(), datasets::Error>(())
    /// ```
    pub fn with_parse_threads(mut self, calls: ParallelCalls) -> Self {
        self.engine = match self.engine {
            Engine::Serial(reader) => Engine::Parallel(Box::new(ParallelParse::new(
                reader,
                self.records,
                self.origin.clone(),
                self.parser.clone(),
                calls,
            ))),
            Engine::Parallel(engine) => {
                Engine::Parallel(Box::new(engine.with_calls(calls, self.records)))
            }
        };
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.origin.path
    }

    /// The schema the rows are read with.
    pub fn schema(&self) -> &Schema {
        &self.parser.schema
    }

    /// The file's header (column names, in file order).
    pub fn header(&self) -> &[String] {
        &self.origin.header
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

    fn next_record(&mut self) -> Option<Next> {
        match &mut self.engine {
            Engine::Serial(reader) => match reader.next_record() {
                Ok(Some((line, record))) => Some(Ok(self.parser.parse(&record, line))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            },
            Engine::Parallel(engine) => engine.next_record(),
        }
    }
}

impl Dataset for CsvDataset {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        loop {
            if self.failed {
                return None;
            }
            let row = match self.next_record()? {
                Ok(row) => row,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            self.records += 1;
            match row {
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
        let (byte, line) = match &self.engine {
            Engine::Serial(reader) => reader.position(),
            Engine::Parallel(engine) => engine.position(),
        };
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
        match &mut self.engine {
            Engine::Serial(reader) => self.origin.reposition(reader, record, byte, line)?,
            Engine::Parallel(engine) => engine.restore(record, byte, line)?,
        }
        self.records = record;
        self.skipped.set(skipped);
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod parallel_tests;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
