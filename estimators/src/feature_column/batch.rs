//! [`TransformedBatch`]: a batch of examples as the numbers a model reads.

/// A batch turned into model inputs by [`ResolvedColumns::transform`].
///
/// [`ResolvedColumns::transform`]: super::ResolvedColumns::transform
#[derive(Clone, Debug, PartialEq)]
pub struct TransformedBatch {
    /// Examples in the batch.
    pub batch_size: usize,
    /// Values per example in `dense`.
    pub dense_width: usize,
    /// Row-major `[batch_size, dense_width]`: numeric values (normalised), one-hot
    /// bucketized (DNN layout) and indicator columns, in column order.
    pub dense: Vec<f32>,
    /// Per embedding column (in column order), the id of every example.
    pub embedding_ids: Vec<Vec<i64>>,
    /// Per sparse column (linear layout, in column order), the id of every example.
    pub sparse_ids: Vec<Vec<i64>>,
}
