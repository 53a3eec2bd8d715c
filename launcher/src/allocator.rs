//! glibc's allocator settings for the tasks, through `GLIBC_TUNABLES`.
//!
//! A training step allocates and frees the same large host buffers every step (a CPU
//! backend's activations and gradients; on CUDA, cubecl's copy of every upload). With
//! glibc's defaults each one above 32 MiB, and many smaller ones once the heap's free top
//! passes the trim threshold, goes back to the kernel when freed and comes back as fresh
//! pages, one page fault each, at the next step. The tasks get a heap that keeps what they
//! free (blocks up to 32 MiB from the heap, no trimming below 1 GiB), as a launcher gives
//! `OMP_NUM_THREADS`; a value in the launcher's own environment, even empty, is left to them.

use std::ffi::OsString;

pub use estimator_cluster::GLIBC_TUNABLES;

/// What every task gets when the launcher inherits no `GLIBC_TUNABLES`: blocks up to the
/// largest the heap serves (32 MiB) come from the heap, and the heap keeps up to 1 GiB of
/// free memory instead of returning it.
pub const TASK_TUNABLES: &str =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824";

/// The `GLIBC_TUNABLES` to give every task: none when the launcher's own (`inherited`) is
/// set, since the tasks inherit it.
pub fn per_task(inherited: Option<OsString>) -> Option<&'static str> {
    match inherited {
        Some(_) => None,
        None => Some(TASK_TUNABLES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_get_the_heap_settings_unless_the_launcher_has_its_own() {
        assert_eq!(per_task(None), Some(TASK_TUNABLES));
        assert_eq!(per_task(Some(OsString::new())), None);
        assert_eq!(per_task(Some("glibc.malloc.arena_max=2".into())), None);
    }
}
