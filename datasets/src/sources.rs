//! Sources: where items come from (CSV, IDX, TFRecord and Parquet files, memory, generators).

pub(crate) mod cell;
pub(crate) mod csv;
mod generator;
mod idx;
mod memory;
pub(crate) mod parquet;
mod reader;
mod regular;
mod table_indices;
pub(crate) mod text;
pub(crate) mod tf_example;
pub(crate) mod tfrecord;

pub use self::csv::{BadRowPolicy, CsvDataset, CsvOptions, RowCounter};
pub use generator::{from_fn, Generator};
pub use idx::{read_idx, IdxArray, IdxDataset};
pub use memory::{from_vec, VecDataset};
pub use parquet::{infer_parquet_schema, parquet_column_names, ParquetBatches, ParquetDataset};
pub use regular::open_regular;
pub use table_indices::{table_indices, TableIndices};
pub use tf_example::{
    DType, FeatureConfig, FeatureLocator, FeatureSpec, FeatureValues, FixedLenFeature, ListKind,
    Located, TfExampleBatches, TfExampleDataset, VarLenFeature, WireError,
};
pub use tfrecord::{masked_crc32c, TfRecordCompression, TfRecordDataset, TfRecordWriter};
