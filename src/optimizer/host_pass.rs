//! Element-wise optimizer updates done in one pass over host memory, for the backends that
//! keep tensors there (Flex, NdArray). Written as tensor ops an update is a dozen passes,
//! each allocating its output: on the CPU that was a fifth of a training step. On Flex,
//! taking a uniquely held tensor's data and making a tensor from data both move the buffer,
//! so the pass is the only copy. Other backends (CUDA) keep the tensor-op form: reading
//! device memory back would cost more than it saves.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};

/// Whether `tensors` are f32 tensors of one shape in host memory.
pub(super) fn eligible<B: Backend, const D: usize>(tensors: &[&Tensor<B, D>]) -> bool {
    let Some(first) = tensors.first() else {
        return false;
    };
    matches!(B::name(&first.device()).as_str(), "flex" | "ndarray")
        && tensors
            .iter()
            .all(|t| t.dtype() == DType::F32 && t.shape() == first.shape())
}

/// `tensors` (checked [`eligible`]) after `update` changed their elements in place.
pub(super) fn in_place<B: Backend, const D: usize, const N: usize>(
    tensors: [Tensor<B, D>; N],
    update: impl FnOnce([&mut [f32]; N]),
) -> [Tensor<B, D>; N] {
    let device = tensors[0].device();
    let mut data: [TensorData; N] = tensors.map(Tensor::into_data);
    update(
        data.each_mut()
            .map(|d| d.as_mut_slice::<f32>().expect("eligible tensors are f32")),
    );
    data.map(|d| Tensor::from_data(d, &device))
}
