//! The defaults serde gives [`RunConfig`](super::RunConfig)'s fields that a saved
//! configuration may lack, and the bound on prefetching.

pub(super) fn default_allreduce_bucket_bytes() -> usize {
    crate::distribute::DEFAULT_BUCKET_BYTES
}

pub(super) fn default_backward_passes_per_step() -> usize {
    1
}

pub(super) fn default_peer_timeout_secs() -> u64 {
    60
}

pub(super) fn default_stall_warning_secs() -> u64 {
    60
}

pub(super) fn default_startup_timeout_secs() -> u64 {
    300
}

/// The most batches [`RunConfig::prefetch_to_device`](super::RunConfig::prefetch_to_device)
/// may build ahead: each holds its tensors, and the queue of them is allocated whole when it
/// starts.
pub const MAX_PREFETCH_TO_DEVICE: usize = 1024;

pub(super) fn default_prefetch_to_device() -> usize {
    8
}

pub(super) fn default_intra_op_threads() -> usize {
    0
}
