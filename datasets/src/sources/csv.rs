//! CSV source: [`CsvDataset`], reading [`Example`]s through a [`Schema`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::cell;
use super::reader::{Record, RecordReader};
use crate::{ColumnType, Dataset, Error, Example, Label, Position, Schema};

/// What to do with a row that cannot be parsed (bad number, ragged row, empty cell
/// without a default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BadRowPolicy {
    /// Return the error (the caller may keep pulling; the row is lost either way).
    #[default]
    Fail,
    /// Skip the row and count it (see [`CsvDataset::skipped_rows`]).
    Skip,
}

/// Options for [`CsvDataset::open_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field delimiter, `b','` by default.
    pub delimiter: u8,
    /// What to do with bad rows.
    pub bad_rows: BadRowPolicy,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            bad_rows: BadRowPolicy::Fail,
        }
    }
}

/// A shared count of rows, readable from any thread (e.g. after the dataset has moved into
/// a `prefetch` thread).
#[derive(Clone, Debug, Default)]
pub struct RowCounter(Arc<AtomicU64>);

impl RowCounter {
    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }

    fn increment(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Where one schema column's value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    DenseFloat,
    DenseInt,
    Categorical,
    LabelFloat,
    LabelClass,
    LabelName,
}

struct Slot {
    /// Index of the column in the schema (for its name in errors).
    column: usize,
    /// Index in `dense` or `categorical`.
    out: usize,
    target: Target,
    default: Option<Box<[u8]>>,
}

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

/// The per-row parsing state, borrowed from the dataset while a record is borrowed from
/// its reader.
struct RowParser<'a> {
    file: &'a str,
    schema: &'a Schema,
    slots: &'a [Slot],
    by_field: &'a [Option<usize>],
    fields: usize,
    num_dense: usize,
    num_categorical: usize,
    delimiter: u8,
}

impl RowParser<'_> {
    fn blank(&self) -> Example {
        Example {
            dense: vec![0.0; self.num_dense],
            categorical: vec![String::new(); self.num_categorical],
            label: Label::None,
        }
    }

    fn ragged(&self, line: u64, found: usize) -> Error {
        Error::RaggedRow {
            file: self.file.to_string(),
            line,
            expected: self.fields,
            found,
        }
    }

    fn parse(&self, record: &Record<'_>, line: u64) -> Result<Example, Error> {
        match *record {
            Record::Line(text) => self.parse_line(text, line),
            Record::Fields { .. } => {
                let fields = record.fields(self.delimiter);
                if fields.len() != self.fields {
                    return Err(self.ragged(line, fields.len()));
                }
                let mut example = self.blank();
                for (field, raw) in fields.into_iter().enumerate() {
                    if let Some(s) = self.by_field[field] {
                        self.cell(&self.slots[s], raw, line, &mut example)?;
                    }
                }
                Ok(example)
            }
        }
    }

    /// A quote-free line: fields are found while numbers are parsed, in one pass.
    fn parse_line(&self, text: &[u8], line: u64) -> Result<Example, Error> {
        let mut example = self.blank();
        let d = self.delimiter;
        let mut cur = 0;
        for field in 0..self.fields {
            let rest = &text[cur..];
            let slot = self.by_field[field].map(|s| &self.slots[s]);
            let mut end = None;
            if let Some(slot) = slot.filter(|s| s.target == Target::DenseFloat) {
                if let Some((v, used)) = cell::parse_decimal_prefix(rest) {
                    if rest.get(used).is_none_or(|&b| b == d) {
                        example.dense[slot.out] = v;
                        end = Some(cur + used);
                    }
                }
            }
            let end = match end {
                Some(end) => end,
                None => {
                    let end = memchr::memchr(d, rest).map_or(text.len(), |i| cur + i);
                    if let Some(slot) = slot {
                        self.cell(slot, &text[cur..end], line, &mut example)?;
                    }
                    end
                }
            };
            if field + 1 < self.fields {
                if end >= text.len() {
                    return Err(self.ragged(line, field + 1));
                }
                cur = end + 1;
            } else if end < text.len() {
                let extra = memchr::memchr_iter(d, &text[end + 1..]).count() + 1;
                return Err(self.ragged(line, self.fields + extra));
            }
        }
        Ok(example)
    }

    fn cell(&self, slot: &Slot, raw: &[u8], line: u64, example: &mut Example) -> Result<(), Error> {
        let text: &[u8] = if cell::trim(raw).is_empty() {
            match (&slot.default, slot.target) {
                (Some(d), _) => d,
                (None, Target::Categorical) => raw,
                (None, _) => {
                    return Err(Error::EmptyValue {
                        file: self.file.to_string(),
                        line,
                        column: self.schema.columns[slot.column].name.clone(),
                    })
                }
            }
        } else {
            raw
        };
        let bad = || {
            let c = &self.schema.columns[slot.column];
            let is_label = matches!(
                slot.target,
                Target::LabelFloat | Target::LabelClass | Target::LabelName
            );
            Error::Parse {
                file: self.file.to_string(),
                line,
                column: c.name.clone(),
                value: crate::error::excerpt(raw),
                expected: cell::expected_name(c.kind, is_label),
            }
        };
        match slot.target {
            Target::DenseFloat => {
                example.dense[slot.out] = cell::parse_f32(text).ok_or_else(bad)?
            }
            Target::DenseInt => {
                example.dense[slot.out] = cell::parse_i64(text).ok_or_else(bad)? as f32;
            }
            Target::Categorical => example.categorical[slot.out] = cell::parse_category(text),
            Target::LabelFloat => {
                example.label = Label::Float(cell::parse_f32(text).ok_or_else(bad)?);
            }
            Target::LabelClass => {
                example.label = Label::Class(cell::parse_class(text).ok_or_else(bad)?);
            }
            Target::LabelName => example.label = Label::Name(cell::parse_category(text)),
        }
        Ok(())
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
mod tests {
    use std::fs::File;
    use std::io::Write;

    use super::*;
    use crate::DatasetExt;

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
            "{}:3: column petal_width: cannot parse 'abc' as float",
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
        let path = write(&dir, "big.csv.gz", &GOOD.repeat(200));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let mut ds = CsvDataset::open(&path, iris_like()).unwrap();
        let out = messages(&mut ds);
        assert!(out.last().unwrap().is_err());
        assert!(ds.next_item().is_none());
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
}
