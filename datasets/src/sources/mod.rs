//! Sources: where items come from (CSV and IDX files, memory, generators).

pub(crate) mod cell;
pub(crate) mod csv;
mod generator;
mod idx;
mod memory;
mod reader;
mod regular;
pub(crate) mod text;

pub use self::csv::{BadRowPolicy, CsvDataset, CsvOptions, RowCounter};
pub use generator::{from_fn, Generator};
pub use idx::{read_idx, IdxArray, IdxDataset};
pub use memory::{from_vec, VecDataset};
pub use regular::open_regular;
