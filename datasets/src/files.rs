//! Many input files: lists and globs ([`InputFiles`]), each worker's share of them under
//! TF's auto-shard policies ([`AutoShardPolicy`]), read one after another or interleaved.

mod auto_shard;
mod input_files;
mod pattern;

pub use auto_shard::AutoShardPolicy;
pub use input_files::{FileInputs, InputFiles, WorkerShare};
