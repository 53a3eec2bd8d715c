//! [`GatherInput`]: what an estimator implements so that its training table can stay on
//! the device; [`CachedBatch`]: the batches such input yields.

use burn::tensor::backend::Backend;

use super::RowIndices;
use crate::error::Result;
use crate::estimator::Estimator;

/// An estimator whose whole training table can be uploaded to the device once and whose
/// batches can then be gathered there by row number (Keras' input cached on the device):
/// the opt-in behind [`DeviceCached`](super::DeviceCached). The canned estimators implement
/// it; a user's estimator does when its device batch is rows of tensors
/// ([`GatherRows`](super::GatherRows) does the picking).
pub trait GatherInput: Estimator {
    /// A whole table on the device, as `gather` reads it (usually the `DeviceBatch` of
    /// the whole table).
    type Table<B: Backend>: Send + 'static;

    /// `table` (every row of the cached input, as one host batch) on `device`. Called once
    /// per training replica, on the loop's device stream.
    fn upload<B: Backend>(&self, table: &Self::Batch, device: &B::Device)
        -> Result<Self::Table<B>>;

    /// The device batch of rows `rows` of an uploaded table: equal, value for value, to
    /// what `to_device` makes of the host batch of those rows.
    fn gather<B: Backend>(
        &self,
        table: &Self::Table<B>,
        rows: &RowIndices<B>,
    ) -> Result<Self::DeviceBatch<B>>;

    /// The host batch of rows `rows` of `table`: what trains, through `to_device`, when the
    /// table does not fit on the device.
    fn host_rows(&self, table: &Self::Batch, rows: &[u32]) -> Result<Self::Batch>;

    /// Rows in `table`.
    fn table_rows(&self, table: &Self::Batch) -> usize;

    /// Bytes `table` takes on the device once uploaded, estimated from above: what is
    /// checked against [`RunConfig::device_cache_bytes`](crate::RunConfig) before uploading.
    fn table_bytes(&self, table: &Self::Batch) -> u64;
}

/// A batch of [`DeviceCached`](super::DeviceCached) input.
#[derive(Debug, Clone, PartialEq)]
pub enum CachedBatch<T> {
    /// Rows of the cached table, by number, in order: gathered on the device when the
    /// table is there, else on the host.
    Rows(Vec<u32>),
    /// A batch of its own (evaluation input, or training input read as before), converted
    /// by the estimator's `to_device`.
    Batch(T),
}
