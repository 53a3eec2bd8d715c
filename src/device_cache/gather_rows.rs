//! [`GatherRows`]: device batches whose rows can be picked by number on the device.

use burn::tensor::backend::Backend;
use burn::tensor::{BasicOps, Element, Int, Tensor, TensorData};

/// Row numbers of a table, on the host and as an index tensor on the device: each step of
/// device-resident input sends only these (4 bytes a row) to the device.
#[derive(Debug, Clone)]
pub struct RowIndices<B: Backend> {
    host: Vec<u32>,
    device: Tensor<B, 1, Int>,
}

impl<B: Backend> RowIndices<B> {
    /// `rows` (each below 2^31), as a tensor on `device` too.
    pub fn new(rows: &[u32], device: &B::Device) -> Self {
        // i32: CUDA's integer tensors are 32-bit, so the upload needs no conversion there.
        let ids: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
        let device = Tensor::from_data(TensorData::new(ids, [rows.len()]), device);
        Self {
            host: rows.to_vec(),
            device,
        }
    }

    /// The row numbers, for values a batch also keeps on the host.
    pub fn host(&self) -> &[u32] {
        &self.host
    }

    /// The row numbers as an index tensor `[rows]` for `Tensor::select`.
    pub fn device(&self) -> Tensor<B, 1, Int> {
        self.device.clone()
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.host.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }
}

/// A device batch whose rows can be picked by number: what lets a whole cached table stay
/// on the device while each step takes its batch from it
/// ([`DeviceCached`](super::DeviceCached)).
///
/// `gather_rows` of a table must equal the batch the same rows would have made on their
/// own, value for value: training then does not depend on where the batch was made.
/// Row-wise transforms (normalising, bucketizing, one-hot) commute with picking rows;
/// anything computed across rows (a batch mean) does not, and belongs in the model.
pub trait GatherRows<B: Backend>: Sized {
    /// The rows `rows` of `self`, in that order.
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self;
}

/// Rows are the first dimension.
impl<B, const D: usize, K> GatherRows<B> for Tensor<B, D, K>
where
    B: Backend,
    K: BasicOps<B>,
    K::Elem: Element,
{
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        self.clone().select(0, rows.device())
    }
}

impl<B: Backend, T: GatherRows<B>> GatherRows<B> for Option<T> {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        self.as_ref().map(|t| t.gather_rows(rows))
    }
}

impl<B: Backend, T: GatherRows<B>> GatherRows<B> for Vec<T> {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        self.iter().map(|t| t.gather_rows(rows)).collect()
    }
}

impl<B: Backend, T: GatherRows<B>, U: GatherRows<B>> GatherRows<B> for (T, U) {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        (self.0.gather_rows(rows), self.1.gather_rows(rows))
    }
}

/// A batch's row count (a model that reads no feature, as the baseline).
impl<B: Backend> GatherRows<B> for usize {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        rows.len()
    }
}
