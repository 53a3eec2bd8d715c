//! File-system helpers shared by checkpoints, exports and configs.

mod atomic;

pub use atomic::{write_atomic, write_json_atomic};
