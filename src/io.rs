//! File-system helpers shared by checkpoints, exports and configs, and the lock that keeps
//! a second run from writing the same directory.

mod atomic;
mod dir_lock;

pub(crate) use atomic::sync_parent_dir;
pub use atomic::{write_atomic, write_json_atomic, AtomicFile};
pub use dir_lock::{DirLock, LOCK_FILE};
