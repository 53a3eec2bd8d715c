//! [`TfRecordWriter`]: records framed as TensorFlow writes them, optionally compressed.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use atomic_file::AtomicFile;
use flate2::write::{GzEncoder, ZlibEncoder};

use super::crc::masked_crc32c;
use super::TfRecordCompression;
use crate::Error;

enum Sink {
    Plain(BufWriter<AtomicFile>),
    Gzip(GzEncoder<BufWriter<AtomicFile>>),
    Zlib(ZlibEncoder<BufWriter<AtomicFile>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
            Sink::Zlib(w) => w,
        }
    }
}

/// Writes a TFRecord file that `tf.data.TFRecordDataset` (with the same `compression_type`)
/// and [`TfRecordDataset`](crate::TfRecordDataset) read back.
///
/// The file is replaced whole or not at all: the records go to a temp file beside `path`,
/// which [`finish`](Self::finish) renames over it. A writer dropped unfinished (an error, a
/// panic) leaves `path` as it was, and so does a run killed half-way (on Linux, with no temp
/// file left either). A FIFO or a device (`/dev/stdout`) is written through directly.
///
/// ```
/// use datasets::{Dataset, DatasetExt, TfRecordCompression, TfRecordDataset, TfRecordWriter};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("data.tfrecord.gz");
/// let mut writer = TfRecordWriter::create(&path, TfRecordCompression::Gzip)?;
/// writer.write_record(b"first")?;
/// writer.write_record(b"")?;
/// writer.finish()?;
/// let records: Vec<Vec<u8>> = TfRecordDataset::open([&path])?.iter().collect::<Result<_, _>>()?;
/// assert_eq!(records, [b"first".to_vec(), Vec::new()]);
/// # Ok::<(), datasets::Error>(())
/// ```
pub struct TfRecordWriter {
    sink: Sink,
    path: PathBuf,
}

impl TfRecordWriter {
    /// Starts writing `path`, which keeps its old content (if any) until [`finish`](Self::finish).
    pub fn create(path: impl AsRef<Path>, compression: TfRecordCompression) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        let file = AtomicFile::create(&path).map_err(|e| Error::io(&path, e))?;
        let file = BufWriter::new(file);
        let level = flate2::Compression::default();
        let sink = match compression {
            TfRecordCompression::None => Sink::Plain(file),
            TfRecordCompression::Gzip => Sink::Gzip(GzEncoder::new(file, level)),
            TfRecordCompression::Zlib => Sink::Zlib(ZlibEncoder::new(file, level)),
        };
        Ok(TfRecordWriter { sink, path })
    }

    /// Appends one record.
    pub fn write_record(&mut self, data: &[u8]) -> Result<(), Error> {
        let length = (data.len() as u64).to_le_bytes();
        let mut header = [0u8; 12];
        header[..8].copy_from_slice(&length);
        header[8..].copy_from_slice(&masked_crc32c(&length).to_le_bytes());
        let footer = masked_crc32c(data).to_le_bytes();
        let w = self.sink.writer();
        w.write_all(&header)
            .and_then(|()| w.write_all(data))
            .and_then(|()| w.write_all(&footer))
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Appends a tf.Example.
    pub fn write_example(&mut self, example: &crate::tf_proto::Example) -> Result<(), Error> {
        self.write_record(&prost::Message::encode_to_vec(example))
    }

    /// Ends the compressed stream, syncs the file and puts it in place: an error here leaves
    /// `path` as it was.
    pub fn finish(self) -> Result<(), Error> {
        let path = self.path;
        let io = |e| Error::io(&path, e);
        let file = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.finish().map_err(io)?,
            Sink::Zlib(w) => w.finish().map_err(io)?,
        };
        let file = file.into_inner().map_err(|e| io(e.into_error()))?;
        file.commit().map_err(io)
    }
}
