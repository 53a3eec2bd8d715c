//! Records copied out of the reader in chunks, for worker threads to parse.

use std::collections::VecDeque;

use super::file::CsvFile;
use super::row::RowParser;
use crate::sources::reader::{CsvRecordReader, Record};
use crate::{Dataset, Error, Example, Position};

/// A chunk closes once its records hold this many bytes: enough work (tens of
/// microseconds of parsing) that handing it to a thread costs little beside it, small
/// enough that a few per thread keep memory flat.
const CHUNK_BYTES: usize = 64 * 1024;

/// One record of a chunk.
struct Span {
    /// 1-based line the record starts on.
    line: u64,
    /// The record's bytes in `Chunk::bytes`.
    start: usize,
    end: usize,
    /// For a record csv-core unquoted: its field ends in `Chunk::field_ends`.
    fields: Option<(usize, usize)>,
    /// Byte offset and line of the next record, i.e. the position once this one is read.
    after: (u64, u64),
}

/// Consecutive records of the file, with where each one ends.
pub(super) struct Chunk {
    bytes: Vec<u8>,
    field_ends: Vec<usize>,
    spans: Vec<Span>,
    /// Position after the chunk: at the end of the file, past any trailing blank lines.
    end: (u64, u64),
    /// The read error that ended the file after these records.
    error: Option<Error>,
}

/// A chunk's records parsed, each with the position after it.
pub(super) struct Parsed {
    pub(super) rows: VecDeque<(Result<Example, Error>, (u64, u64))>,
    pub(super) end: (u64, u64),
    pub(super) error: Option<Error>,
}

/// Parses every record of `chunk` (on a worker thread).
pub(super) fn parse_chunk(parser: &RowParser, chunk: Chunk) -> Parsed {
    let rows = chunk
        .spans
        .iter()
        .map(|span| {
            let data = &chunk.bytes[span.start..span.end];
            let record = match span.fields {
                None => Record::Line(data),
                Some((a, b)) => Record::Fields {
                    data,
                    ends: &chunk.field_ends[a..b],
                },
            };
            (parser.parse(&record, span.line), span.after)
        })
        .collect();
    Parsed {
        rows,
        end: chunk.end,
        error: chunk.error,
    }
}

/// The records of a file as [`Chunk`]s: a dataset, so that a `map_parallel` stage can
/// read it ahead and put it back (restore) like any other.
///
/// It ends with one chunk holding the last records (possibly none) and the position at
/// the end of the file, so the reader of the chunks knows where the file ended.
pub(super) struct ChunkReader {
    reader: CsvRecordReader,
    origin: CsvFile,
    /// Records read so far.
    records: u64,
    done: bool,
}

impl ChunkReader {
    pub(super) fn new(reader: CsvRecordReader, records: u64, origin: CsvFile) -> Self {
        ChunkReader {
            reader,
            origin,
            records,
            done: false,
        }
    }
}

impl Dataset for ChunkReader {
    type Item = Chunk;

    fn next_item(&mut self) -> Option<Result<Chunk, Error>> {
        if self.done {
            return None;
        }
        let mut chunk = Chunk {
            bytes: Vec::with_capacity(CHUNK_BYTES + CHUNK_BYTES / 4),
            field_ends: Vec::new(),
            spans: Vec::new(),
            end: (0, 0),
            error: None,
        };
        while chunk.bytes.len() < CHUNK_BYTES {
            let (line, record) = match self.reader.next_record() {
                Ok(Some(next)) => next,
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    chunk.error = Some(e);
                    self.done = true;
                    break;
                }
            };
            let start = chunk.bytes.len();
            let fields = match record {
                Record::Line(text) => {
                    chunk.bytes.extend_from_slice(text);
                    None
                }
                Record::Fields { data, ends } => {
                    chunk.bytes.extend_from_slice(data);
                    let a = chunk.field_ends.len();
                    chunk.field_ends.extend_from_slice(ends);
                    Some((a, chunk.field_ends.len()))
                }
            };
            self.records += 1;
            chunk.spans.push(Span {
                line,
                start,
                end: chunk.bytes.len(),
                fields,
                after: self.reader.position(),
            });
        }
        chunk.end = self.reader.position();
        Some(Ok(chunk))
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
            skipped: 0,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Csv {
            record, byte, line, ..
        } = *position
        else {
            return Err(Error::position_mismatch("csv", position));
        };
        self.origin
            .reposition(&mut self.reader, record, byte, line)?;
        self.records = record;
        self.done = false;
        Ok(())
    }
}
