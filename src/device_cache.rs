//! Device-resident input (Keras' cached dataset on the device): a training table that fits
//! the device cache budget is uploaded to the device once, and each step's batch is gathered
//! there by row number, so a step sends 4 bytes a row instead of the row.
//!
//! The rows' order comes from the same host pipeline the rows would go through, run over
//! their numbers ([`datasets::table_indices`]): the same shuffle, repeat, shard and batch
//! stages give the same rows in the same order, and the positions a checkpoint records are
//! the cache's, so resume stays step-exact and a checkpoint of either input restores into
//! the other. An estimator opts in with [`GatherInput`]; [`DeviceCached`] trains it so.

mod budget;
mod cached;
mod gather_input;
mod gather_rows;
mod resident;

pub use budget::{device_cache_budget, CachePlan};
pub use cached::DeviceCached;
pub use gather_input::{CachedBatch, GatherInput};
pub use gather_rows::{GatherRows, RowIndices};

#[cfg(test)]
mod tests;
