//! Values that do not decode: the one fault of the protocol's values themselves, met by
//! the gRPC edge and reported by the shard that was sent them.

/// A variable whose bytes are not a whole number of `f32` values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable {path}: {bytes} bytes is not a whole number of f32 values")]
pub struct RaggedValues {
    /// The variable.
    pub path: String,
    /// Its byte count.
    pub bytes: usize,
}
