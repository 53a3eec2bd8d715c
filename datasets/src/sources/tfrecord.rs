//! TFRecord source: [`TfRecordDataset`], the records of TFRecord files (plain, GZIP or
//! ZLIB), as `tf.data.TFRecordDataset` reads them; [`TfRecordWriter`] writes them.

mod chunks;
mod compression;
mod crc;
mod reader;
mod record_file;
mod writer;

use std::path::Path;
use std::sync::Arc;

use crate::{open_regular, Dataset, Error, Position};
use reader::TfRecordReader;

pub(crate) use chunks::{BufferPool, RecordChunk, RecordChunks};
pub use compression::TfRecordCompression;
pub use crc::masked_crc32c;
pub(crate) use record_file::{RecordFile, RecordMeta};
pub use writer::TfRecordWriter;

/// The records of one or more TFRecord files, read in order, each as its bytes.
///
/// Both CRCs of every record are checked; a record whose CRC does not match, or a file that
/// ends inside a record, is an [`Error::Record`] naming the file, the record (1-based) and
/// its byte offset, and ends the stream. Only regular files are opened (a FIFO or a device
/// is refused, see [`open_regular`]). The position is the file, the records read from it
/// and the offset of the next one: restoring seeks a plain file and reads a compressed one
/// again up to that record.
pub struct TfRecordDataset {
    files: Arc<[RecordFile]>,
    /// Index of the file read now (`files.len()` once all are read).
    file: usize,
    reader: Option<TfRecordReader>,
    failed: bool,
}

impl TfRecordDataset {
    /// Opens `paths`, each compressed as its name says ([`TfRecordCompression::infer`]:
    /// `*.gz` GZIP, `*.zlib` ZLIB, anything else plain).
    pub fn open<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Self, Error> {
        let files = paths
            .into_iter()
            .map(|p| RecordFile::new(p.as_ref(), TfRecordCompression::infer(p.as_ref())))
            .collect();
        TfRecordDataset::with_files(files)
    }

    /// Opens `paths`, all with `compression` (TensorFlow's `compression_type`), whatever
    /// their names.
    pub fn open_with<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
        compression: TfRecordCompression,
    ) -> Result<Self, Error> {
        let files = paths
            .into_iter()
            .map(|p| RecordFile::new(p.as_ref(), compression))
            .collect();
        TfRecordDataset::with_files(files)
    }

    fn with_files(files: Vec<RecordFile>) -> Result<Self, Error> {
        if files.is_empty() {
            return Err(Error::InvalidArgument(
                "a TFRecord dataset needs at least one file".into(),
            ));
        }
        // Every file is looked at now, so that a missing tenth shard fails the run before
        // it trains on the first nine.
        for file in &files {
            open_regular(&file.path)?;
        }
        Ok(TfRecordDataset {
            files: files.into(),
            file: 0,
            reader: None,
            failed: false,
        })
    }

    /// The files, in reading order.
    pub fn paths(&self) -> impl ExactSizeIterator<Item = &Path> + '_ {
        self.files.iter().map(|f| f.path.as_path())
    }

    pub(crate) fn files(&self) -> &Arc<[RecordFile]> {
        &self.files
    }

    /// The reader of the current file, opened when first needed; `None` after the last
    /// file, or after an error (then returned once).
    fn reader(&mut self) -> Option<Result<&mut TfRecordReader, Error>> {
        if self.failed || self.file >= self.files.len() {
            return None;
        }
        if self.reader.is_none() {
            match TfRecordReader::open(&self.files[self.file]) {
                Ok(reader) => self.reader = Some(reader),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
        self.reader.as_mut().map(Ok)
    }

    /// Moves on to the next file.
    fn next_file(&mut self) {
        self.file += 1;
        self.reader = None;
    }

    /// The next record's data, its data CRC not yet checked; `None` after the last file, or
    /// after an error.
    pub(crate) fn next_slice(&mut self) -> Option<Result<(&[u8], RecordMeta), Error>> {
        let (range, meta) = loop {
            let reader = match self.reader()? {
                Ok(reader) => reader,
                Err(e) => return Some(Err(e)),
            };
            match reader.next() {
                Ok(Some(record)) => break record,
                Ok(None) => self.next_file(),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        };
        let file = self.file;
        let data = self.reader.as_ref()?.data(range);
        Some(Ok((data, RecordMeta { file, ..meta })))
    }

    /// Up to `size` records (fewer only at the end of the last file, or before an error the
    /// chunk then carries) in buffers of their own, taken from `pool` where it has some;
    /// `None` after the last file, or after an error.
    pub(crate) fn next_chunk(
        &mut self,
        size: usize,
        pool: &BufferPool,
    ) -> Option<Result<RecordChunk, Error>> {
        let mut chunk = RecordChunk::new(self.files.clone(), pool.clone());
        while chunk.len() < size {
            let file = self.file;
            let reader = match self.reader() {
                Some(Ok(reader)) => reader,
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            };
            let mut records = Vec::new();
            let wanted = size - chunk.len();
            let (data, framed) = reader.chunk(wanted, pool.take(), &mut records);
            let got = records.len();
            for (_, meta) in &mut records {
                meta.file = file;
            }
            chunk.push(data, records);
            if let Err(e) = framed {
                self.failed = true;
                if chunk.is_empty() {
                    return Some(Err(e));
                }
                chunk.error = Some(e);
                break;
            }
            if got < wanted {
                self.next_file();
            }
        }
        (!chunk.is_empty()).then_some(Ok(chunk))
    }
}

impl Dataset for TfRecordDataset {
    type Item = Vec<u8>;

    fn next_item(&mut self) -> Option<Result<Vec<u8>, Error>> {
        let files = self.files.clone();
        let checked = self.next_slice()?.and_then(|(data, meta)| {
            files[meta.file].check_data(&meta, data)?;
            Ok(data.to_vec())
        });
        self.failed |= checked.is_err();
        Some(checked)
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn position(&self) -> Position {
        let (record, byte) = self
            .reader
            .as_ref()
            .map_or((0, 0), TfRecordReader::position);
        Position::TfRecord {
            file: self.file as u64,
            record,
            byte,
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::TfRecord { file, record, byte } = *position else {
            return Err(Error::position_mismatch("tfrecord", position));
        };
        let index = usize::try_from(file).unwrap_or(usize::MAX);
        if index > self.files.len() {
            return Err(Error::Position(format!(
                "file {file} of a TFRecord dataset of {} files",
                self.files.len()
            )));
        }
        self.reader = None;
        if index < self.files.len() && (record, byte) != (0, 0) {
            let mut reader = TfRecordReader::open(&self.files[index])?;
            reader.reposition(record, byte)?;
            self.reader = Some(reader);
        }
        self.file = index;
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
