//! What an all-reduce leaves in the buffers.

/// What an all-reduce leaves in the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reduce {
    /// The element-wise sum.
    Sum,
    /// The sum divided by the world size: by the rank completing each chunk, before it is
    /// sent round, so the division costs no pass of its own and all ranks get its bits.
    Mean,
}
