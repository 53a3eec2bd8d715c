//! Combinators: the stages returned by [`DatasetExt`](crate::DatasetExt) methods.

mod batch;
mod batch_columnar;
mod cache;
mod cache_table;
mod concatenate;
mod filter;
mod flat_map;
mod interleave;
mod map;
mod parallel_map;
mod prefetch;
mod repeat;
mod sample_from;
mod shard;
mod shuffle;
mod skip;
mod take;
mod zip;

pub use batch::Batch;
pub use batch_columnar::BatchColumnar;
pub use cache::Cache;
pub use cache_table::CacheTable;
pub use concatenate::Concatenate;
pub use filter::Filter;
pub use flat_map::{FlatMap, Unbatch};
pub use interleave::{interleave, Built, Inputs, Interleave};
pub use map::{Map, TryMap};
pub use parallel_map::{ParallelCalls, ParallelMap};
pub use prefetch::Prefetch;
pub use repeat::Repeat;
pub use sample_from::{sample_from_datasets, SampleFrom};
pub use shard::Shard;
pub use shuffle::Shuffle;
pub use skip::Skip;
pub use take::Take;
pub use zip::Zip;

/// Every remaining item of `ds`, unwrapped: what the stages' and sources' tests compare.
#[cfg(test)]
pub(crate) fn collect<D: crate::Dataset>(mut ds: D) -> Vec<D::Item> {
    std::iter::from_fn(|| ds.next_item())
        .map(Result::unwrap)
        .collect()
}
