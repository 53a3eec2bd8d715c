//! Why a checkpoint index file cannot be used; apart from the index so that `error.rs` can
//! hold it without an import cycle (the index writes through `io`, which uses `error.rs`).

/// Why an index file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The file is not the JSON of an index.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// An entry of `all` is not a checkpoint file name.
    #[error("'{name}' is not a checkpoint file name (ckpt-<step>.ckpt)")]
    NotACheckpoint {
        /// The entry at fault.
        name: String,
    },
    /// An entry of `all` appears twice.
    #[error("'{name}' is listed twice")]
    ListedTwice {
        /// The entry at fault.
        name: String,
    },
    /// `timestamps` and `all` differ in length.
    #[error("{timestamps} timestamps for {checkpoints} checkpoints")]
    Timestamps {
        /// The length of `timestamps`.
        timestamps: usize,
        /// The length of `all`.
        checkpoints: usize,
    },
    /// `latest` is not the last entry of `all`.
    #[error("latest {latest:?} is not the last of all ({last:?})")]
    LatestNotLast {
        /// The index's `latest`.
        latest: Option<String>,
        /// The last entry of `all`.
        last: Option<String>,
    },
}
