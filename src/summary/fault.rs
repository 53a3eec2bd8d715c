//! Why an events file cannot be read back: its TFRecord framing, or the protobuf in a record.

use std::fmt;

/// What is wrong with an events file, carried by [`Error::Summary`](crate::Error::Summary)
/// with the file's path. A framing fault names the record (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryFault {
    /// The length does not match its CRC.
    LengthCrc {
        /// The record's index in the file.
        record: usize,
    },
    /// The length does not fit in memory on this platform.
    RecordLength {
        /// The record's index in the file.
        record: usize,
        /// The announced length.
        len: u64,
    },
    /// The data does not match its CRC.
    DataCrc {
        /// The record's index in the file.
        record: usize,
    },
    /// The bytes end inside a varint.
    TruncatedVarint,
    /// A varint runs past the 10 bytes a 64-bit value needs.
    VarintTooLong,
    /// A field announces more bytes than are left.
    Truncated {
        /// The bytes the field needs.
        needed: usize,
        /// The bytes left in the message.
        left: usize,
    },
    /// A field number beyond `u32`.
    FieldNumber {
        /// The field number decoded from the key.
        number: u64,
    },
    /// A length-delimited field longer than this platform can address.
    FieldLength {
        /// The announced length.
        len: u64,
    },
    /// A wire type this decoder does not read (groups, or an invalid one).
    WireType {
        /// The wire type of the key.
        wire_type: u8,
        /// The field number of the key.
        field: u32,
    },
    /// A repeated double field holding something else.
    NotDoubles {
        /// The field found instead, as decoded.
        found: String,
    },
    /// A field that must be a double is not one.
    NotADouble {
        /// The message type, e.g. `HistogramProto`.
        message: &'static str,
        /// The field's name.
        field: &'static str,
    },
    /// A known field has the wrong wire type.
    Malformed {
        /// The message type, e.g. `Event`.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The field found, as decoded.
        found: String,
    },
    /// A string field that is not UTF-8.
    Utf8(std::string::FromUtf8Error),
}

impl fmt::Display for SummaryFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryFault::LengthCrc { record } => write!(f, "record {record}: length CRC mismatch"),
            SummaryFault::RecordLength { record, len } => {
                write!(f, "record {record}: length {len}")
            }
            SummaryFault::DataCrc { record } => write!(f, "record {record}: data CRC mismatch"),
            SummaryFault::TruncatedVarint => write!(f, "truncated varint"),
            SummaryFault::VarintTooLong => write!(f, "varint longer than 10 bytes"),
            SummaryFault::Truncated { needed, left } => {
                write!(f, "field needs {needed} bytes, {left} left")
            }
            SummaryFault::FieldNumber { number } => write!(f, "field number {number}"),
            SummaryFault::FieldLength { len } => {
                write!(f, "field length {len} does not fit in memory")
            }
            SummaryFault::WireType { wire_type, field } => {
                write!(f, "unsupported wire type {wire_type} for field {field}")
            }
            SummaryFault::NotDoubles { found } => write!(f, "expected doubles, found {found}"),
            SummaryFault::NotADouble { message, field } => {
                write!(f, "{message}.{field} is not a double")
            }
            SummaryFault::Malformed {
                message,
                field,
                found,
            } => write!(f, "{message} field {field} malformed: {found}"),
            SummaryFault::Utf8(e) => write!(f, "invalid UTF-8: {e}"),
        }
    }
}
