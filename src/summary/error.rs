//! Why an events file cannot be read back: its TFRecord framing, or the protobuf in a record.

use std::path::PathBuf;

/// An events file that cannot be read back; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// A record's framing is truncated or fails its CRC.
    #[error("{path}: {source}")]
    Record {
        /// The events file at fault.
        path: PathBuf,
        /// What is wrong with the record.
        source: RecordError,
    },
    /// A record does not hold a valid `Event` message.
    #[error("{path}: {source}")]
    Decode {
        /// The events file at fault.
        path: PathBuf,
        /// What is wrong with the message.
        source: DecodeError,
    },
}

/// A TFRecord frame that cannot be used; every variant names the record (0-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// Fewer than the 12 bytes of a record header are left.
    #[error("record {record}: truncated header")]
    TruncatedHeader {
        /// The record's index in the file.
        record: usize,
    },
    /// The length does not match its CRC.
    #[error("record {record}: length CRC mismatch")]
    LengthCrc {
        /// The record's index in the file.
        record: usize,
    },
    /// The length does not fit in memory on this platform.
    #[error("record {record}: length {len}")]
    Length {
        /// The record's index in the file.
        record: usize,
        /// The announced length.
        len: u64,
    },
    /// Fewer bytes are left than the header announced (plus the data CRC).
    #[error("record {record}: truncated data ({len} bytes announced)")]
    TruncatedData {
        /// The record's index in the file.
        record: usize,
        /// The announced length.
        len: usize,
    },
    /// The data does not match its CRC.
    #[error("record {record}: data CRC mismatch")]
    DataCrc {
        /// The record's index in the file.
        record: usize,
    },
}

/// Bytes that are not a valid protobuf `Event` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes end inside a varint.
    #[error("truncated varint")]
    TruncatedVarint,
    /// A varint runs past the 10 bytes a 64-bit value needs.
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A field announces more bytes than are left.
    #[error("field needs {needed} bytes, {left} left")]
    Truncated {
        /// The bytes the field needs.
        needed: usize,
        /// The bytes left in the message.
        left: usize,
    },
    /// A field number beyond `u32`.
    #[error("field number {number}")]
    FieldNumber {
        /// The field number decoded from the key.
        number: u64,
    },
    /// A length-delimited field longer than this platform can address.
    #[error("field length {len} does not fit in memory")]
    Length {
        /// The announced length.
        len: u64,
    },
    /// A wire type this decoder does not read (groups, or an invalid one).
    #[error("unsupported wire type {wire_type} for field {field}")]
    WireType {
        /// The wire type of the key.
        wire_type: u8,
        /// The field number of the key.
        field: u32,
    },
    /// A repeated double field holding something else.
    #[error("expected doubles, found {found}")]
    NotDoubles {
        /// The field found instead, as decoded.
        found: String,
    },
    /// A field that must be a double is not one.
    #[error("{message}.{field} is not a double")]
    NotADouble {
        /// The message type, e.g. `HistogramProto`.
        message: &'static str,
        /// The field's name.
        field: &'static str,
    },
    /// A known field has the wrong wire type.
    #[error("{message} field {field} malformed: {found}")]
    Malformed {
        /// The message type, e.g. `Event`.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The field found, as decoded.
        found: String,
    },
    /// A string field that is not UTF-8.
    #[error("invalid UTF-8: {0}")]
    Utf8(#[from] std::string::FromUtf8Error),
}
