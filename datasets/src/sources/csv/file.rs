//! Opening a CSV file and putting its reader back at a saved record.

use std::path::{Path, PathBuf};

use crate::sources::reader::CsvRecordReader;
use crate::sources::{cell, text};
use crate::Error;

/// Opens `path` and reads its header row (names trimmed, and UTF-8: a name is what a
/// schema finds its column by).
pub(crate) fn open_reader(
    path: &Path,
    delimiter: u8,
) -> Result<(CsvRecordReader, Vec<String>), Error> {
    let mut reader = CsvRecordReader::open(path, delimiter)?;
    let file = path.display().to_string();
    let header = match reader.next_record()? {
        Some((line, record)) => record
            .fields(delimiter)
            .into_iter()
            .enumerate()
            .map(|(i, name)| Ok(text::utf8(cell::trim(name), &file, line, None, i + 1)?.to_owned()))
            .collect::<Result<_, Error>>()?,
        None => Vec::new(),
    };
    Ok((reader, header))
}

/// What it takes to reopen a CSV file and check it is the one a position was taken on.
#[derive(Clone, Debug)]
pub(super) struct CsvFile {
    pub(super) path: PathBuf,
    /// The path as text, for messages.
    pub(super) file: String,
    pub(super) header: Vec<String>,
    pub(super) delimiter: u8,
}

impl CsvFile {
    /// Moves `reader` to data record `record` (0-based), which starts at `byte` on
    /// `line`: a plain file seeks, a gzip one is read again from the start up to it.
    pub(super) fn reposition(
        &self,
        reader: &mut CsvRecordReader,
        record: u64,
        byte: u64,
        line: u64,
    ) -> Result<(), Error> {
        let changed = |what: &str| {
            Error::Position(format!(
                "{}: {what}; has the file changed since the position was taken?",
                self.file
            ))
        };
        if !reader.is_gzip() {
            let len = std::fs::metadata(&self.path)
                .map_err(|e| Error::io(&self.path, e))?
                .len();
            if byte > len {
                return Err(changed(&format!(
                    "byte {byte} is past the end ({len} bytes)"
                )));
            }
            // A record, and a line end, take a byte at least: more is no place in this file,
            // and counting on from it would overflow.
            if record > byte || line > byte.saturating_add(1) {
                return Err(changed(&format!(
                    "{record} records and {line} lines cannot be read by byte {byte}"
                )));
            }
            return reader.seek(byte, line);
        }
        let (mut fresh, header) = open_reader(&self.path, self.delimiter)?;
        if header != self.header {
            return Err(changed("the header differs"));
        }
        for _ in 0..record {
            match fresh.next_record() {
                Ok(Some(_)) => {}
                Ok(None) => return Err(changed(&format!("fewer than {record} records"))),
                Err(e) => return Err(e),
            }
        }
        if fresh.position().0 != byte {
            return Err(changed(&format!(
                "record {record} does not start at byte {byte}"
            )));
        }
        *reader = fresh;
        Ok(())
    }
}
