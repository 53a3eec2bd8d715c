//! Gradients larger than a bucket, cut into slices of a bucket each where the backend keeps
//! tensors off host memory.
//!
//! Each slice is read off the device, all-reduced and uploaded on its own, so one large
//! gradient flows through the pipeline like several buckets: slice `k + 1` is read while `k`
//! is on the wire and `k - 1` is uploaded, where the whole gradient would pass each stage
//! alone. It also keeps every upload small: cubecl 0.10 copies the data of each upload into a
//! fresh host buffer first, and a buffer of tens of MiB comes from fresh pages (a page fault
//! each) at every step. On host memory a gradient's own buffer is reduced in place, so
//! nothing is cut there.

use std::collections::BTreeMap;

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use super::params::Taken;

/// Marks a slice's name: `path#0003` is slice 3 of gradient `path` (parameter paths are
/// Rust field names joined by dots, so never hold one).
const SLICE_MARK: char = '#';

/// `taken` with every gradient longer than `slice_len` values replaced by its slices of
/// `slice_len` values (the last one shorter), each a view of the gradient on its device.
pub(super) fn cut<B: AutodiffBackend>(
    taken: BTreeMap<String, Taken<B>>,
    slice_len: usize,
) -> BTreeMap<String, Taken<B>> {
    let slice_len = slice_len.max(1);
    let mut out = BTreeMap::new();
    for (name, whole) in taken {
        if whole.len <= slice_len {
            out.insert(name, whole);
            continue;
        }
        for (k, start) in (0..whole.len).step_by(slice_len).enumerate() {
            let len = slice_len.min(whole.len - start);
            let grad = whole.grad.clone().map(|g| g.narrow(0, start, len));
            let slice = Taken {
                len,
                matrix: None,
                device: whole.device.clone(),
                grad,
            };
            out.insert(format!("{name}{SLICE_MARK}{k:04}"), slice);
        }
    }
    out
}

/// An averaged slice (or gradient) on its device.
type Slice<B> = Tensor<<B as AutodiffBackend>::InnerBackend, 1>;

/// Joins the averaged slices in `averaged` back into whole gradients, on their device.
pub(super) fn join<B: AutodiffBackend>(averaged: &mut BTreeMap<String, Slice<B>>) {
    let sliced: Vec<String> = averaged
        .keys()
        .filter(|name| name.contains(SLICE_MARK))
        .cloned()
        .collect();
    let mut wholes: BTreeMap<String, Vec<(usize, Slice<B>)>> = BTreeMap::new();
    for name in sliced {
        let slice = averaged.remove(&name).expect("listed above");
        let (whole, k) = name.rsplit_once(SLICE_MARK).expect("filtered above");
        let k = k.parse().unwrap_or(usize::MAX);
        wholes
            .entry(whole.to_string())
            .or_default()
            .push((k, slice));
    }
    for (whole, mut slices) in wholes {
        slices.sort_by_key(|(k, _)| *k);
        let slices = slices.into_iter().map(|(_, slice)| slice).collect();
        averaged.insert(whole, Tensor::cat(slices, 0));
    }
}
