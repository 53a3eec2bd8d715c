//! Variables other programs define that this framework's processes honour as they are:
//! `RUST_LOG` (the log filter every tracing program reads), `CUDA_VISIBLE_DEVICES` (the GPUs
//! a process may use), `GLIBC_TUNABLES` (the C library's settings: a training process sets
//! its heap's only where it is unset) and `MNIST_DIR` (where the MNIST files are); read here
//! so that the rest of the workspace takes them as arguments.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The log filter variable.
pub const RUST_LOG: &str = "RUST_LOG";

/// The GPUs CUDA shows this process.
pub const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// The settings glibc (2.26 and later) reads at start-up; other C libraries ignore it.
pub const GLIBC_TUNABLES: &str = "GLIBC_TUNABLES";

/// A directory holding the MNIST IDX files.
pub const MNIST_DIR: &str = "MNIST_DIR";

/// This process's `RUST_LOG` filter; `None` when unset or not Unicode.
pub fn log_filter_from_env() -> Option<String> {
    std::env::var(RUST_LOG).ok()
}

/// This process's `CUDA_VISIBLE_DEVICES` as set; `None` when unset or not Unicode.
pub fn cuda_visible_devices_from_env() -> Option<String> {
    std::env::var(CUDA_VISIBLE_DEVICES).ok()
}

/// This process's `GLIBC_TUNABLES` as set, even empty; `None` when unset.
pub fn glibc_tunables_from_env() -> Option<OsString> {
    std::env::var_os(GLIBC_TUNABLES)
}

/// The directories to look for the MNIST files in, first match wins: `$MNIST_DIR` when
/// set, then `shared/data/mnist` beside the workspace, where CI keeps them.
pub fn mnist_dirs_from_env() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os(MNIST_DIR)
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace.join("../shared/data/mnist")])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_beside_the_workspace_is_the_last_candidate() {
        let shared = mnist_dirs_from_env().pop().unwrap();
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .canonicalize()
            .unwrap();
        // `shared/data/mnist` three levels below the directory holding the workspace.
        let beside = shared.ancestors().nth(3).unwrap().canonicalize().unwrap();
        assert_eq!(Some(beside.as_path()), workspace.parent());
        assert!(
            shared.ends_with("shared/data/mnist"),
            "{}",
            shared.display()
        );
    }
}
