//! A heap that keeps the large host buffers a training process frees, so that they are not
//! taken back from the kernel as fresh pages at the next step.
//!
//! A step allocates and frees the same large buffers every step: a CPU backend's
//! activations and gradients, HTTP/2's receive buffers (1 MiB frames between machines), on
//! CUDA cubecl's host copy of every upload. With glibc's defaults a block above its
//! (moving) mmap threshold goes back to the kernel when freed, as does a heap's free top
//! past twice that threshold; either comes back at the next step one page fault per page
//! (BENCHMARKS.md, "On one GPU (H200)" and "Keeping freed memory in the process").
//!
//! So a training process asks glibc for what `GLIBC_TUNABLES` would set at start-up
//! (`glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824`): blocks
//! up to 32 MiB (the largest glibc serves from a heap) from the heap, and up to 1 GiB of
//! free heap kept. A process given `GLIBC_TUNABLES` (even empty) keeps what it says. Other
//! C libraries are left as they are.
//!
//! Blocks of 32 MiB or more always come from a fresh `mmap` in glibc; [`KeepLargeBlocks`], a
//! global allocator a binary may install, keeps those.
//!
//! `mallopt` is a C function, hence this module's `unsafe`: it takes glibc's allocator lock
//! and may be called at any time.
#![allow(unsafe_code)]

use std::sync::OnceLock;

mod large_blocks;

pub use large_blocks::KeepLargeBlocks;

/// Tests that measure the C library's heap, or move large blocks through it, take turns.
#[cfg(test)]
static HEAP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Blocks up to this size come from a heap (glibc's ceiling on 64-bit, `HEAP_MAX_SIZE / 2`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 32 << 20;

/// A heap returns its free top to the kernel only beyond this size.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 1 << 30;

/// Makes this process's heap keep what it frees (see the module's text), once, unless its
/// environment sets `GLIBC_TUNABLES`. Training, serving variables and the all-reduce
/// benchmark call it as they start; a program may call it earlier. Returns whether this
/// process's heap keeps freed memory this way.
pub fn keep_freed_memory() -> bool {
    static KEPT: OnceLock<bool> = OnceLock::new();
    *KEPT.get_or_init(|| {
        let kept = crate::cluster::glibc_tunables_from_env().is_none() && apply();
        if kept {
            tracing::debug!("heap: freed blocks up to 32 MiB and 1 GiB of free heap kept");
        }
        kept
    })
}

/// Sets the two thresholds; false where the C library refuses them or has none.
fn apply() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only sets two of the allocator's parameters, under its lock.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Page faults taken by the calling thread so far: `minflt`, the 10th field of its
    /// `stat`, counted after the name's closing parenthesis (the 2nd field).
    fn thread_page_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(7).unwrap().parse().unwrap()
    }

    /// Page faults of one step's worth of buffers: four of 8 MiB, written, then freed
    /// together, as a step frees its activations.
    fn step_faults() -> u64 {
        let before = thread_page_faults();
        let buffers: Vec<Vec<u8>> = (0..4).map(|i| vec![i as u8 + 1; 8 << 20]).collect();
        assert!(buffers.iter().all(|b| b[b.len() - 1] != 0));
        drop(buffers);
        thread_page_faults() - before
    }

    #[test]
    fn buffers_freed_by_a_step_come_back_without_page_faults() {
        // Measured in a process of its own: under the whole suite, other tests' threads
        // share glibc's arenas, and a step's buffers may then land in a heap of their own
        // that glibc unmaps as soon as it is empty, whatever the thresholds (one run in
        // five here faulted half the pages at every step).
        const NAME: &str =
            "host_heap::tests::buffers_freed_by_a_step_come_back_without_page_faults";
        if !std::env::args().any(|arg| arg == "--exact") {
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([NAME, "--exact", "--test-threads=1", "--nocapture"])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&child.stdout);
            assert!(
                child.status.success() && stdout.contains("1 passed"),
                "the measurement in a process of its own: {}\n{stdout}{}",
                child.status,
                String::from_utf8_lossy(&child.stderr)
            );
            return;
        }
        let _alone = HEAP_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        assert!(apply(), "glibc refused the thresholds");
        // 32 MiB a step is 8192 pages; with glibc's defaults every step faults them all
        // (the freed 32 MiB top is past twice the 8 MiB threshold, and is trimmed).
        let pages = (32 << 20) / 4096;
        // A thread of its own: its own fault count, and a heap that other tests' threads
        // may share at times (glibc has a few per core), which can move one run's buffers:
        // the defaults fault every attempt, so three are allowed.
        let mut attempts = Vec::new();
        for _ in 0..3 {
            let faults = std::thread::spawn(|| (0..3).map(|_| step_faults()).collect::<Vec<_>>())
                .join()
                .unwrap();
            if faults[1] < pages / 8 && faults[2] < pages / 8 {
                return;
            }
            attempts.push(faults);
        }
        panic!("page faults per step: {attempts:?} (of {pages} pages)");
    }
}
