//! Element-wise optimizer updates done in one pass over host memory, for the backends that
//! keep tensors there (Flex, NdArray). Written as tensor ops an update is a dozen passes,
//! each allocating its output: on the CPU that was a fifth of a training step. On Flex,
//! taking a uniquely held tensor's data and making a tensor from data both move the buffer,
//! so the pass is the only copy. Other backends (CUDA) keep the tensor-op form: reading
//! device memory back would cost more than it saves.
//!
//! A large variable's pass is split over the CPU threads of the loop's pool: it streams
//! seven values per element through memory, a tenth of a step on MNIST's first layer when
//! one core did it. Each element's update is the same on any thread, so the bits are too.

use burn::tensor::backend::Backend;
use burn::tensor::{DType, Tensor, TensorData};

/// Whether `tensors` are f32 tensors of one shape in host memory.
pub(super) fn eligible<B: Backend, const D: usize>(tensors: &[&Tensor<B, D>]) -> bool {
    let Some(first) = tensors.first() else {
        return false;
    };
    crate::device::in_host_memory::<B>(&first.device())
        && tensors
            .iter()
            .all(|t| t.dtype() == DType::F32 && t.shape() == first.shape())
}

/// Elements below which a pass stays on one thread: handing half of it to another thread
/// costs more than the half.
const SPLIT_AT_LEAST: usize = 32 * 1024;

/// `tensors` (checked [`eligible`]) after `update` changed their elements in place, `update`
/// called on aligned runs of elements of all of them (element by element the same update
/// wherever a run starts).
pub(super) fn in_place<B: Backend, const D: usize, const N: usize>(
    tensors: [Tensor<B, D>; N],
    update: impl Fn([&mut [f32]; N]) + Sync,
) -> [Tensor<B, D>; N] {
    let device = tensors[0].device();
    let mut data: [TensorData; N] = tensors.map(Tensor::into_data);
    split(
        data.each_mut()
            .map(|d| d.as_mut_slice::<f32>().expect("eligible tensors are f32")),
        &update,
    );
    data.map(|d| Tensor::from_data(d, &device))
}

/// Runs `update` on `slices` (of one length), in halves on the current rayon pool's threads
/// while they are large enough.
fn split<const N: usize>(slices: [&mut [f32]; N], update: &(impl Fn([&mut [f32]; N]) + Sync)) {
    let len = slices[0].len();
    if len < 2 * SPLIT_AT_LEAST || rayon::current_num_threads() == 1 {
        update(slices);
        return;
    }
    let mut halves = slices.map(|s| {
        let (left, right) = s.split_at_mut(len / 2);
        (Some(left), Some(right))
    });
    let left = std::array::from_fn(|i| halves[i].0.take().expect("taken once"));
    let right = std::array::from_fn(|i| halves[i].1.take().expect("taken once"));
    rayon::join(|| split(left, update), || split(right, update));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::with_cpu_threads;

    #[test]
    fn a_large_pass_is_split_over_the_pools_threads_and_covers_every_element_once() {
        let len = 5 * SPLIT_AT_LEAST + 7;
        let mut a: Vec<f32> = (0..len).map(|i| i as f32).collect();
        let mut b = vec![0.0f32; len];
        let threads = std::sync::Mutex::new(std::collections::HashSet::new());
        let pieces = std::sync::atomic::AtomicUsize::new(0);
        with_cpu_threads(2, || {
            split([&mut a, &mut b], &|[a, b]: [&mut [f32]; 2]| {
                threads.lock().unwrap().insert(std::thread::current().id());
                pieces.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                for (a, b) in a.iter_mut().zip(b.iter_mut()) {
                    *b += *a + 1.0;
                    *a *= 2.0;
                }
            })
        })
        .unwrap();
        assert!((0..len).all(|i| a[i] == 2.0 * i as f32 && b[i] == i as f32 + 1.0));
        assert!(pieces.into_inner() > 1);
        let threads = threads.into_inner().unwrap();
        assert!(!threads.is_empty() && threads.len() <= 2);
    }

    #[test]
    fn a_small_pass_or_a_one_thread_pool_runs_in_one_piece() {
        for (len, threads) in [(2 * SPLIT_AT_LEAST - 1, 2), (8 * SPLIT_AT_LEAST, 1)] {
            let mut a = vec![1.0f32; len];
            let pieces = std::sync::atomic::AtomicUsize::new(0);
            with_cpu_threads(threads, || {
                split([&mut a], &|[a]: [&mut [f32]; 1]| {
                    pieces.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    a.iter_mut().for_each(|x| *x += 1.0);
                })
            })
            .unwrap();
            assert_eq!(pieces.into_inner(), 1, "{len} elements, {threads} threads");
            assert!(a.iter().all(|&x| x == 2.0));
        }
    }
}
