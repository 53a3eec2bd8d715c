//! [`RecordChunks`]: records read a batch's worth at a time into buffers of their own, for
//! decoding on worker threads; the buffers come back through a [`BufferPool`] once decoded.

use std::sync::{Arc, Mutex};

use super::record_file::Framed;
use super::{RecordFile, RecordMeta, TfRecordDataset};
use crate::{Dataset, Error, Position};

/// Buffers of decoded chunks, kept for the next ones: a pipeline in steady state reads into
/// memory it already has (no page faults, nothing zeroed).
#[derive(Clone, Debug, Default)]
pub(crate) struct BufferPool {
    free: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// Chunks in flight at once: the one being read, those with the workers, a few done.
const KEEP: usize = 8;

impl BufferPool {
    pub(crate) fn take(&self) -> Option<Vec<u8>> {
        // A poisoned lock only means a thread panicked while pushing: the stack is intact.
        match self.free.lock() {
            Ok(mut free) => free.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        }
    }

    fn give(&self, buffer: Vec<u8>) {
        let mut free = match self.free.lock() {
            Ok(free) => free,
            Err(poisoned) => poisoned.into_inner(),
        };
        if free.len() < KEEP && buffer.capacity() > 0 {
            free.push(buffer);
        }
    }
}

/// The records of one batch, their CRCs not yet checked: one buffer per file they came
/// from (usually one), each with its records.
pub(crate) struct RecordChunk {
    segments: Vec<(Vec<u8>, Framed)>,
    pub(crate) files: Arc<[RecordFile]>,
    /// The error framing stopped at, after these records: it is reported once they are
    /// decoded, as reading them one by one would.
    pub(crate) error: Option<Error>,
    pool: BufferPool,
}

impl RecordChunk {
    pub(crate) fn new(files: Arc<[RecordFile]>, pool: BufferPool) -> Self {
        RecordChunk {
            segments: Vec::new(),
            files,
            error: None,
            pool,
        }
    }

    pub(crate) fn push(&mut self, data: Vec<u8>, records: Framed) {
        if records.is_empty() {
            self.pool.give(data);
        } else {
            self.segments.push((data, records));
        }
    }

    /// Number of records.
    pub(crate) fn len(&self) -> usize {
        self.segments.iter().map(|(_, r)| r.len()).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Each record's data with its origin, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &RecordMeta)> + '_ {
        self.segments.iter().flat_map(|(data, records)| {
            records
                .iter()
                .map(move |(range, meta)| (&data[range.clone()], meta))
        })
    }
}

impl Drop for RecordChunk {
    fn drop(&mut self) {
        for (data, _) in self.segments.drain(..) {
            self.pool.give(data);
        }
    }
}

/// Groups of `size` records, the last one shorter unless `drop_remainder`; positions are the
/// records' (as `batch`'s are its upstream's).
pub(crate) struct RecordChunks {
    records: TfRecordDataset,
    size: usize,
    drop_remainder: bool,
    pool: BufferPool,
}

impl RecordChunks {
    pub(crate) fn new(records: TfRecordDataset, size: usize, drop_remainder: bool) -> Self {
        RecordChunks {
            records,
            size,
            drop_remainder,
            pool: BufferPool::default(),
        }
    }
}

impl Dataset for RecordChunks {
    type Item = RecordChunk;

    fn next_item(&mut self) -> Option<Result<RecordChunk, Error>> {
        let chunk = self.records.next_chunk(self.size, &self.pool)?;
        match chunk {
            Ok(chunk)
                if self.drop_remainder && chunk.len() < self.size && chunk.error.is_none() =>
            {
                None
            }
            other => Some(other),
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        self.records.position()
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.records.restore(position)
    }
}
