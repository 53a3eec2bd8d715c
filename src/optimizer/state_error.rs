//! Why optimizer state cannot be written or read back.

/// The optimizer state (MessagePack, keyed by parameter path) failed to encode or decode.
#[derive(Debug, thiserror::Error)]
pub enum OptimizerStateError {
    /// The state cannot be serialised.
    #[error("cannot serialise the optimizer state: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
    /// The bytes are not optimizer state of this optimizer.
    #[error("cannot read the optimizer state: {0}")]
    Decode(#[from] rmp_serde::decode::Error),
}
