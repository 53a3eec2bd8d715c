//! Why a checkpoint index file cannot be used; apart from the index so that `error.rs` can
//! hold it without an import cycle (the index writes through `io`, which uses `error.rs`).

use std::fmt;

/// What is wrong with an index file, carried by [`Error::CheckpointIndex`](
/// crate::Error::CheckpointIndex) with the file's path.
#[derive(Debug)]
pub enum IndexFault {
    /// The file is not the JSON of an index.
    Json(serde_json::Error),
    /// An entry of `all` is not a checkpoint file name.
    NotACheckpoint {
        /// The entry at fault.
        name: String,
    },
    /// An entry of `all` appears twice.
    ListedTwice {
        /// The entry at fault.
        name: String,
    },
    /// `timestamps` and `all` differ in length.
    Timestamps {
        /// The length of `timestamps`.
        timestamps: usize,
        /// The length of `all`.
        checkpoints: usize,
    },
    /// `latest` is not the last entry of `all`.
    LatestNotLast {
        /// The index's `latest`.
        latest: Option<String>,
        /// The last entry of `all`.
        last: Option<String>,
    },
}

impl fmt::Display for IndexFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexFault::Json(e) => write!(f, "{e}"),
            IndexFault::NotACheckpoint { name } => {
                write!(
                    f,
                    "'{name}' is not a checkpoint file name (ckpt-<step>.ckpt)"
                )
            }
            IndexFault::ListedTwice { name } => write!(f, "'{name}' is listed twice"),
            IndexFault::Timestamps {
                timestamps,
                checkpoints,
            } => write!(f, "{timestamps} timestamps for {checkpoints} checkpoints"),
            IndexFault::LatestNotLast { latest, last } => {
                write!(f, "latest {latest:?} is not the last of all ({last:?})")
            }
        }
    }
}
