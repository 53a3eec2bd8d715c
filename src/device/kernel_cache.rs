//! Compiled CUDA kernels kept on disk, so that every process after the first on a machine
//! starts without compiling them again.
//!
//! cubecl compiles each kernel (NVRTC, C++ to PTX) the first time it runs: several seconds of
//! a run's first steps. It can keep the PTX in a cache directory, but only when its
//! configuration names one, and its cache appends to one file without locking it, so two
//! processes of a local cluster sharing a directory could interleave their writes. Each
//! process therefore claims a slot directory of its own under the cache root, held by a lock
//! until it exits; the next process to start takes the first free slot and reads what an
//! earlier one compiled there. (The driver's own cache, `~/.nv/ComputeCache`, then skips the
//! PTX-to-machine-code step.)
//!
//! A `cubecl.toml` (or `burn.toml`'s `[cubecl]` section) in the working directory or above it
//! that sets `[compilation] cache` is used as it is.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

/// How many processes on one machine can each hold a slot of the cache at once; later ones
/// run without it.
const SLOTS: usize = 64;

/// The directory of the cache this process holds, and the lock that holds it.
#[derive(Debug)]
struct Slot {
    dir: PathBuf,
    _lock: File,
}

/// The first slot under `root` that no other process (and no other [`Slot`] of this one)
/// holds, created as needed.
fn claim_slot(root: &Path) -> io::Result<Slot> {
    for n in 0..SLOTS {
        let dir = root.join(format!("slot-{n}"));
        fs::create_dir_all(&dir)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))?;
        match lock.try_lock() {
            Ok(()) => return Ok(Slot { dir, _lock: lock }),
            Err(TryLockError::WouldBlock) => continue,
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "all {SLOTS} slots are held by running processes"
    )))
}

/// Where compiled kernels are kept: the user's cache directory (`$XDG_CACHE_HOME`, else
/// `~/.cache`), then the GPU models this process sees, since kernels are compiled for one
/// architecture and a home directory may be shared by machines with other GPUs.
#[cfg(feature = "cuda")]
fn default_root() -> io::Result<PathBuf> {
    let base =
        dirs::cache_dir().ok_or_else(|| io::Error::other("this user has no cache directory"))?;
    Ok(base
        .join("estimator")
        .join("cuda-kernels")
        .join(gpu_models()?))
}

/// The names of the CUDA devices this process sees, distinct, as one path segment
/// (`NVIDIA-H100-80GB-HBM3`).
#[cfg(feature = "cuda")]
fn gpu_models() -> io::Result<String> {
    use cudarc::driver::result;
    let driver = |e: result::DriverError| io::Error::other(format!("CUDA driver: {e}"));
    result::init().map_err(driver)?;
    let count = result::device::get_count().map_err(driver)?;
    let mut names = (0..count)
        .map(|ordinal| result::device::get(ordinal).and_then(result::device::get_name))
        .collect::<Result<Vec<_>, _>>()
        .map_err(driver)?;
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(io::Error::other("no CUDA device is visible"));
    }
    Ok(path_segment(&names.join("+")))
}

/// `name` with every character but ASCII letters, digits, `_`, `+` and `-` made `-`.
#[cfg(any(feature = "cuda", test))]
fn path_segment(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '+' | '-' => c,
            _ => '-',
        })
        .collect()
}

/// Points cubecl's kernel cache at a slot of [`default_root`], once per process and before
/// cubecl first reads its configuration. Without a usable directory kernels are compiled
/// as before, with a warning saying why.
#[cfg(feature = "cuda")]
pub(crate) fn install() {
    install_at(default_root);
}

#[cfg(feature = "cuda")]
fn install_at(root: impl FnOnce() -> io::Result<PathBuf>) {
    use burn::cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
    use std::sync::{Arc, OnceLock};

    static HELD: OnceLock<Option<Slot>> = OnceLock::new();
    HELD.get_or_init(|| {
        if CubeClRuntimeConfig::storage().lock().is_some() {
            // cubecl has already read its configuration; it cannot change any more.
            return None;
        }
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        let mut slot = None;
        if config.compilation.cache.is_none() {
            let claimed = root().and_then(|root| claim_slot(&root).map_err(|e| annotate(&root, e)));
            match claimed {
                Ok(held) => {
                    tracing::debug!("CUDA kernel cache: {}", held.dir.display());
                    config.compilation.cache = Some(CacheConfig::File(held.dir.clone()));
                    slot = Some(held);
                }
                Err(e) => tracing::warn!("CUDA kernels will be compiled afresh: {e}"),
            }
        }
        let mut stored = CubeClRuntimeConfig::storage().lock();
        if stored.is_none() {
            *stored = Some(Arc::new(config));
        }
        slot
    });
}

#[cfg(feature = "cuda")]
fn annotate(root: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("kernel cache {}: {e}", root.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_slot_is_not_handed_out_again_until_it_is_dropped() {
        let root = tempfile::tempdir().unwrap();
        let first = claim_slot(root.path()).unwrap();
        let second = claim_slot(root.path()).unwrap();
        assert_ne!(first.dir, second.dir);
        assert_eq!(first.dir, root.path().join("slot-0"));
        let first_dir = first.dir.clone();
        drop(first);
        let third = claim_slot(root.path()).unwrap();
        assert_eq!(third.dir, first_dir, "a released slot is reused");
    }

    #[test]
    fn an_unusable_root_is_an_error_not_a_panic() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("not-a-directory");
        std::fs::write(&file, b"").unwrap();
        assert!(claim_slot(&file).is_err());
    }

    #[test]
    fn gpu_model_names_become_one_safe_path_segment() {
        assert_eq!(
            path_segment("NVIDIA H100 80GB HBM3+Tesla T4/x"),
            "NVIDIA-H100-80GB-HBM3+Tesla-T4-x"
        );
        assert_eq!(path_segment(".."), "--");
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn cubecl_is_configured_to_cache_kernels_in_the_claimed_slot_once() {
        use burn::cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
        let root = tempfile::tempdir().unwrap();
        install_at(|| Ok(root.path().to_path_buf()));
        install_at(|| panic!("a second install looks for no directory"));
        match &CubeClRuntimeConfig::get().compilation.cache {
            Some(CacheConfig::File(dir)) => assert_eq!(dir, &root.path().join("slot-0")),
            other => panic!("kernel cache not configured: {other:?}"),
        }
        let other = claim_slot(root.path()).unwrap();
        assert_eq!(other.dir, root.path().join("slot-1"), "slot-0 stays held");
    }
}
