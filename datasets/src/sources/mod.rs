//! Sources: where items come from (CSV, IDX and TFRecord files, memory, generators).

pub(crate) mod cell;
pub(crate) mod csv;
mod generator;
mod idx;
mod memory;
mod reader;
mod regular;
pub(crate) mod text;
pub(crate) mod tf_example;
pub(crate) mod tfrecord;

pub use self::csv::{BadRowPolicy, CsvDataset, CsvOptions, RowCounter};
pub use generator::{from_fn, Generator};
pub use idx::{read_idx, IdxArray, IdxDataset};
pub use memory::{from_vec, VecDataset};
pub use regular::open_regular;
pub use tf_example::{
    DType, FeatureConfig, FeatureSpec, FixedLenFeature, TfExampleBatches, TfExampleDataset,
    VarLenFeature,
};
pub use tfrecord::{masked_crc32c, TfRecordCompression, TfRecordDataset, TfRecordWriter};
