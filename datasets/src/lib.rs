//! Input pipelines for `estimator`, in the style of `tf.data`: sources, combinators,
//! sharding, background prefetch, and positions that survive a checkpoint.
//!
//! A pipeline is a chain of [`Dataset`]s. A source ([`CsvDataset`], [`IdxDataset`],
//! [`TfRecordDataset`], [`TfExampleDataset`], [`ParquetDataset`], [`from_vec`], [`from_fn`])
//! yields items; the combinators of [`DatasetExt`] (`map`, `map_parallel`, `filter`,
//! `flat_map`, `unbatch`, `shuffle`, `batch`, `repeat`, `take`, `skip`, `shard`, `prefetch`,
//! `cache`, `zip`, `concatenate`, `cache_table`, `batch_columnar`), [`interleave`] and
//! [`sample_from_datasets`] transform them. Everything is lazy and deterministic given its
//! seeds. At any moment [`Dataset::position`] says where the pipeline stands, as a
//! [`Position`] that serialises to JSON; a pipeline rebuilt the same way and given that
//! position with [`Dataset::restore`] yields exactly the items that would have followed.
//!
//! ```
//! use datasets::{bundled, CsvDataset, Dataset, DatasetExt, FeatureStats, Label, Position};
//!
//! # fn main() -> Result<(), datasets::Error> {
//! // Iris ships with the crate; tabular sources yield `Example`s laid out by a schema.
//! let schema = bundled::iris_schema();
//! let path = bundled::iris_train_path();
//!
//! // Statistics for standardising the features, from one pass over the training set.
//! let stats = FeatureStats::compute(CsvDataset::open(&path, schema.clone())?)?;
//!
//! // Worker 0 of 2: shuffled, sharded, standardised batches of 32, read ahead on a thread.
//! let build = || -> Result<_, datasets::Error> {
//!     let stats = stats.clone();
//!     Ok(CsvDataset::open(&path, schema.clone())?
//!         .shuffle(1000, 42)
//!         .shard(2, 0)
//!         .map(move |mut ex| {
//!             stats.normalize(&mut ex.dense);
//!             ex
//!         })
//!         .batch(32, false)
//!         .prefetch(4))
//! };
//! let mut pipeline = build()?;
//! let first = pipeline.next_item().unwrap()?;
//! assert_eq!(first.len(), 32);
//! assert!(matches!(first[0].label, Label::Class(0..=2)));
//!
//! // Save the position (e.g. in a checkpoint), rebuild, restore, carry on.
//! let saved: String = serde_json::to_string(&pipeline.position()).unwrap();
//! let rest: Vec<_> = pipeline.iter().collect::<Result<_, _>>()?;
//! let mut resumed = build()?;
//! resumed.restore(&serde_json::from_str::<Position>(&saved).unwrap())?;
//! let again: Vec<_> = resumed.iter().collect::<Result<_, _>>()?;
//! assert_eq!(again, rest);
//! assert_eq!(rest.iter().map(Vec::len).sum::<usize>(), 60 - 32);
//! # Ok(())
//! # }
//! ```
//!
//! Costly per-item work (parsing, decoding, augmentation) can run on several threads
//! with [`DatasetExt::map_parallel`], as `tf.data`'s `map(num_parallel_calls=AUTOTUNE)`:
//! items keep their order and positions stay exact, so the pipeline above could read
//! `.map_parallel(f, ParallelCalls::Autotune)` in place of `.map(f)` and still resume
//! from a checkpoint mid-epoch. See [`combinators::ParallelMap`].
//!
//! **Columnar batches.** For training on tabular data, [`DatasetExt::cache_table`] keeps
//! the first pass of [`Example`]s as one columnar table and later epochs yield
//! [`TableRow`]s (a shared handle on the table and an index, no allocation), and
//! [`DatasetExt::batch_columnar`] gathers rows into [`ColumnarBatch`]es: dense values
//! contiguous and row-major `[rows, dense_width]`, one [`StringColumn`] per categorical
//! feature, the labels as one [`Labels`] column. Dropped batches hand their buffers back
//! for the next ones, so in steady state a pipeline such as
//! `cache_table().shuffle(n, seed).repeat(None).batch_columnar(128, false).prefetch(4)`
//! allocates nothing per row or per batch. Positions are those of `cache` and `batch`,
//! so resume is step-exact. [`CsvDataset::with_parse_threads`] parses a CSV file on
//! several threads, with the same rows, errors and positions as on one.
//!
//! ```
//! use datasets::{from_vec, Dataset, DatasetExt, Example, Label, Labels};
//!
//! # fn main() -> Result<(), datasets::Error> {
//! let rows: Vec<Example> = (0..1000)
//!     .map(|i| Example { dense: vec![i as f32; 8], label: Label::Class(i % 10), ..Example::default() })
//!     .collect();
//! let build = || from_vec(rows.clone()).cache_table().shuffle(256, 1).repeat(None).batch_columnar(128, false).prefetch(4);
//! let mut pipeline = build();
//! for _ in 0..10 {
//!     pipeline.next_item().unwrap()?; // past the first epoch: rows now come from the table
//! }
//! let batch = pipeline.next_item().unwrap()?;
//! assert_eq!((batch.rows, batch.dense_width, batch.dense.len()), (128, 8, 128 * 8));
//! let Labels::Class(classes) = &batch.labels else { unreachable!() };
//! assert_eq!(classes[5] as f32, batch.dense_row(5)[0] % 10.0);
//!
//! let saved = pipeline.position();
//! let next = pipeline.next_item().unwrap()?;
//! let mut resumed = build();
//! resumed.restore(&saved)?;
//! assert_eq!(resumed.next_item().unwrap()?, next);
//! # Ok(())
//! # }
//! ```
//!
//! **Many files.** [`InputFiles::resolve`] expands a list of paths and globs
//! (`"data/train-*.csv"`, matches sorted); [`InputFiles::for_worker`] gives each worker of a
//! cluster its share under TF's [`AutoShardPolicy`] (`FILE`: its own files; `DATA`: its own
//! rows of every file); [`InputFiles::read`] reads the files one after another or
//! interleaved (tf.data's `interleave(cycle_length, block_length)`), its position naming the
//! file and the place in it. [`ParquetDataset`] reads Parquet files' columns straight into
//! columnar batches.
//!
//! Errors are values, never panics: bad cells, ragged rows, truncated files and bad
//! arguments (`shard(0, 0)`) come back as [`Error`]s whose messages name the file, line
//! and column, e.g. `iris.csv:17: column petal_width: cannot parse 'abc' as float (finite)`.

pub mod bundled;
mod columnar;
pub mod combinators;
mod dataset;
mod error;
mod example;
mod ext;
mod files;
mod forward;
mod infer;
mod position;
mod rng;
mod schema;
mod sources;
mod stats;

pub use columnar::{
    BatchRow, ColumnarBatch, ColumnarRow, LabelRef, Labels, StringColumn, TableRow,
};
pub use combinators::{interleave, sample_from_datasets, Inputs, ParallelCalls};
pub use dataset::Dataset;
pub use error::Error;
pub use example::{Example, Label};
pub use ext::{DatasetExt, Iter};
pub use files::{AutoShardPolicy, FileInputs, InputFiles, WorkerShare};
pub use forward::BoxDataset;
pub use infer::{infer_schema, infer_schema_with};
pub use position::Position;
pub use rng::SplitMix64;
pub use schema::{Column, ColumnType, Schema};
pub use sources::tf_example::example_proto as tf_proto;
pub use sources::{
    from_fn, from_vec, infer_parquet_schema, masked_crc32c, open_regular, parquet_column_names,
    read_idx, table_indices, BadRowPolicy, CsvDataset, CsvOptions, DType, FeatureConfig,
    FeatureLocator, FeatureSpec, FeatureValues, FixedLenFeature, Generator, IdxArray, IdxDataset,
    ListKind, Located, ParquetBatches, ParquetDataset, RowCounter, TableIndices, TfExampleBatches,
    TfExampleDataset, TfRecordCompression, TfRecordDataset, TfRecordWriter, VarLenFeature,
    VecDataset, WireError,
};
pub use stats::{FeatureStats, StatsAccumulator};
