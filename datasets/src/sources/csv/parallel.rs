//! CSV parsing split across threads: chunks of records parsed by a `map_parallel`
//! stage, handed out again one record at a time.

use std::sync::Arc;

use super::chunks::{parse_chunk, ChunkReader, Parsed};
use super::file::CsvFile;
use super::row::RowParser;
use super::Next;
use crate::combinators::ParallelMap;
use crate::sources::reader::CsvRecordReader;
use crate::{Dataset, Error, ParallelCalls, Position};

/// The threaded engine of a [`CsvDataset`](super::CsvDataset).
///
/// The chunk reader runs on the caller's thread inside an ordered `map_parallel` stage,
/// which keeps chunks in file order and reads at most two per thread ahead. Positions
/// are not the stage's (those fall between chunks) but the ones recorded after each
/// record, so a position taken between any two rows is exact.
pub(super) struct ParallelParse {
    chunks: ParallelMap<ChunkReader, Parsed>,
    calls: ParallelCalls,
    origin: CsvFile,
    /// The chunk being handed out.
    current: Parsed,
    /// Byte offset and line of the next record.
    at: (u64, u64),
    started: bool,
    /// An error to return on the next pull (from [`ParallelParse::with_calls`]).
    pending: Option<Error>,
}

fn empty(at: (u64, u64)) -> Parsed {
    Parsed {
        rows: Default::default(),
        end: at,
        error: None,
    }
}

fn stage(
    reader: CsvRecordReader,
    records: u64,
    origin: CsvFile,
    parser: Arc<RowParser>,
    calls: ParallelCalls,
) -> ParallelMap<ChunkReader, Parsed> {
    let chunks = ChunkReader::new(reader, records, origin);
    ParallelMap::new(chunks, move |chunk| Ok(parse_chunk(&parser, chunk)), calls)
}

impl ParallelParse {
    pub(super) fn new(
        reader: CsvRecordReader,
        records: u64,
        origin: CsvFile,
        parser: Arc<RowParser>,
        calls: ParallelCalls,
    ) -> Self {
        let at = reader.position();
        ParallelParse {
            chunks: stage(reader, records, origin.clone(), parser, calls),
            calls,
            origin,
            current: empty(at),
            at,
            started: false,
            pending: None,
        }
    }

    /// The same engine on `calls` threads, going on after data record `records`.
    pub(super) fn with_calls(mut self, calls: ParallelCalls, records: u64) -> Self {
        self.chunks.set_calls(calls);
        self.calls = calls;
        if self.started {
            let (byte, line) = self.at;
            if let Err(e) = self.restore(records, byte, line) {
                self.pending = Some(e);
            }
        }
        self
    }

    pub(super) fn next_record(&mut self) -> Option<Next> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        if !self.started {
            self.started = true;
            if self.calls.threads() == 0 {
                return Some(Err(Error::InvalidArgument(format!(
                    "{}: CSV parsing needs at least 1 thread, got ParallelCalls::Fixed(0)",
                    self.origin.file
                ))));
            }
        }
        loop {
            if let Some((row, after)) = self.current.rows.pop_front() {
                self.at = after;
                return Some(Ok(row));
            }
            if let Some(e) = self.current.error.take() {
                return Some(Err(e));
            }
            match self.chunks.next_item() {
                Some(Ok(parsed)) => self.current = parsed,
                // A worker that panicked, or a reader that cannot be put back.
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.at = self.current.end;
                    return None;
                }
            }
        }
    }

    pub(super) fn position(&self) -> (u64, u64) {
        self.at
    }

    /// Drops the chunks read ahead and reads again from record `record` at `byte`.
    pub(super) fn restore(&mut self, record: u64, byte: u64, line: u64) -> Result<(), Error> {
        self.chunks.restore(&Position::Csv {
            record,
            byte,
            line,
            skipped: 0,
        })?;
        self.current = empty((byte, line));
        self.at = (byte, line);
        self.started = false;
        self.pending = None;
        Ok(())
    }
}
