//! [`TfExampleBatches`]: tf.Examples decoded straight into columnar batches, on the caller's
//! thread or several.

use std::sync::Arc;

use super::parser::{ExampleParser, Found};
use crate::columnar::Recycler;
use crate::combinators::ParallelMap;
use crate::sources::tfrecord::{RecordChunk, RecordChunks, TfRecordDataset};

use crate::{ColumnarBatch, Dataset, DatasetExt, Error, ParallelCalls, Position};

/// Who decodes the chunks of records.
// One per dataset: boxing the larger variant would add an indirection per batch.
#[allow(clippy::large_enum_variant)]
enum Engine {
    Serial(RecordChunks),
    Parallel(ParallelMap<RecordChunks, ColumnarBatch>),
}

/// Columnar batches of tf.Examples, from
/// [`TfExampleDataset::into_batches`](super::TfExampleDataset::into_batches).
///
/// The caller's thread reads each batch's records into one buffer (checking their framing);
/// the records' data CRCs are checked and their examples decoded by whoever decodes the
/// batch: the caller's thread, or with [`with_parse_threads`](Self::with_parse_threads)
/// worker threads, several batches at a time. Batches come out in order either way, with
/// the positions of `batch_columnar`, and their buffers are reused once dropped.
pub struct TfExampleBatches {
    engine: Engine,
    parser: Arc<ExampleParser>,
    recycle: Recycler,
    size: usize,
    failed: bool,
}

impl TfExampleBatches {
    pub(crate) fn new(
        records: TfRecordDataset,
        parser: Arc<ExampleParser>,
        size: usize,
        drop_remainder: bool,
    ) -> Self {
        TfExampleBatches {
            engine: Engine::Serial(RecordChunks::new(records, size, drop_remainder)),
            parser,
            recycle: Recycler::default(),
            size,
            failed: false,
        }
    }

    /// Decodes on `calls` worker threads ([`ParallelCalls::Autotune`]: one per core), as
    /// `map(parse_example, num_parallel_calls=...)`; at most twice as many batches are read
    /// ahead. Call it before the first pull (a stage pulled from must be restored after).
    pub fn with_parse_threads(mut self, calls: ParallelCalls) -> Self {
        self.engine = match self.engine {
            Engine::Serial(chunks) => {
                let (parser, recycle) = (self.parser.clone(), self.recycle.clone());
                Engine::Parallel(
                    chunks.try_map_parallel(move |chunk| decode(&parser, &recycle, chunk), calls),
                )
            }
            Engine::Parallel(mut map) => {
                map.set_calls(calls);
                Engine::Parallel(map)
            }
        };
        self
    }
}

/// The examples of `chunk` as one batch; the first error in record order.
fn decode(
    parser: &ExampleParser,
    recycle: &Recycler,
    mut chunk: RecordChunk,
) -> Result<ColumnarBatch, Error> {
    let mut batch = ColumnarBatch::recycled(recycle);
    parser.begin(&mut batch);
    batch.reserve_rows(chunk.len());
    let mut found = Found::new();
    for (data, meta) in chunk.iter() {
        let file = &chunk.files[meta.file];
        file.check_data(meta, data)?;
        parser
            .parse_row(data, &mut batch, &mut found)
            .map_err(|fault| file.error(meta.record, meta.offset, fault.to_string()))?;
    }
    match chunk.error.take() {
        Some(e) => Err(e),
        None => Ok(batch),
    }
}

impl Dataset for TfExampleBatches {
    type Item = ColumnarBatch;

    fn next_item(&mut self) -> Option<Result<ColumnarBatch, Error>> {
        if self.failed {
            return None;
        }
        if self.size == 0 {
            self.failed = true;
            return Some(Err(Error::InvalidArgument(
                "tf.Example batch size must be at least 1".into(),
            )));
        }
        let next = match &mut self.engine {
            Engine::Serial(chunks) => chunks
                .next_item()
                .map(|chunk| chunk.and_then(|chunk| decode(&self.parser, &self.recycle, chunk))),
            Engine::Parallel(map) => map.next_item(),
        }?;
        self.failed = next.is_err();
        Some(next)
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        match &self.engine {
            Engine::Serial(chunks) => chunks.position(),
            Engine::Parallel(map) => map.position(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        match &mut self.engine {
            Engine::Serial(chunks) => chunks.restore(position)?,
            Engine::Parallel(map) => map.restore(position)?,
        }
        self.failed = false;
        Ok(())
    }
}
