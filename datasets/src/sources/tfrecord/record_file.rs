//! A file of a TFRecord dataset and the origin of each record read from it: what errors
//! name (file, record number, byte offset) and the data's CRC check.

use std::ops::Range;
use std::path::Path;

use super::crc::masked_crc32c;
use super::TfRecordCompression;
use crate::Error;

/// Where a record was read from, and the CRC its data must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordMeta {
    /// Index of the file in the dataset's list.
    pub(crate) file: usize,
    /// 0-based number of the record in its file.
    pub(crate) record: u64,
    /// Byte offset of the record's header (in the decompressed stream).
    pub(crate) offset: u64,
    /// The data's masked CRC-32C, as stored.
    pub(crate) crc: u32,
}

/// Records framed in one buffer: each one's data range in it and origin.
pub(crate) type Framed = Vec<(Range<usize>, RecordMeta)>;

/// A file of a TFRecord dataset: how to open it and how errors name it.
#[derive(Clone, Debug)]
pub(crate) struct RecordFile {
    pub(crate) path: std::path::PathBuf,
    pub(crate) name: String,
    pub(crate) compression: TfRecordCompression,
}

impl RecordFile {
    pub(crate) fn new(path: &Path, compression: TfRecordCompression) -> Self {
        RecordFile {
            path: path.to_path_buf(),
            name: path.display().to_string(),
            compression,
        }
    }

    /// An [`Error::Record`] about record `record` (0-based) at `offset`.
    pub(crate) fn error(&self, record: u64, offset: u64, message: impl Into<String>) -> Error {
        Error::Record {
            file: self.name.clone(),
            record: record + 1,
            offset,
            compression: self.compression.tf_name(),
            message: message.into(),
        }
    }

    /// Checks `data` against the CRC stored with it.
    pub(crate) fn check_data(&self, meta: &RecordMeta, data: &[u8]) -> Result<(), Error> {
        let computed = masked_crc32c(data);
        if computed == meta.crc {
            return Ok(());
        }
        Err(self.error(
            meta.record,
            meta.offset,
            format!(
                "data CRC mismatch (stored 0x{:08x}, computed 0x{computed:08x} over {} bytes): \
                 the record is damaged",
                meta.crc,
                data.len()
            ),
        ))
    }
}
