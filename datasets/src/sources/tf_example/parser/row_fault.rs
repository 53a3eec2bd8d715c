//! [`RowFault`]: why a record does not fit the feature spec, before the reader adds the file,
//! record number and byte offset that make it an `Error::Record`.

use std::fmt;

use super::super::field_walk::WireError;

/// Why a tf.Example could not be written as a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RowFault {
    /// Bytes that are not a tf.Example's protobuf, and the feature they are in when known.
    Malformed {
        /// What the wire walk found.
        wire: WireError,
        /// The feature whose entry it is in.
        feature: Option<String>,
    },
    /// A feature whose values do not fit the spec: missing without a default, of another
    /// type, of another number of values, or a value the column cannot take. The text names
    /// the feature.
    Mismatch(String),
}

impl RowFault {
    /// The same fault, placed in `feature` if it had no place yet.
    pub(super) fn in_feature(self, name: &str) -> Self {
        match self {
            RowFault::Malformed {
                wire,
                feature: None,
            } => RowFault::Malformed {
                wire,
                feature: Some(name.to_string()),
            },
            placed => placed,
        }
    }
}

impl From<WireError> for RowFault {
    fn from(wire: WireError) -> Self {
        RowFault::Malformed {
            wire,
            feature: None,
        }
    }
}

impl fmt::Display for RowFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowFault::Malformed {
                wire,
                feature: None,
            } => write!(f, "malformed tf.Example: {wire}"),
            RowFault::Malformed {
                wire,
                feature: Some(name),
            } => write!(f, "malformed tf.Example: {wire} in feature '{name}'"),
            RowFault::Mismatch(message) => f.write_str(message),
        }
    }
}
