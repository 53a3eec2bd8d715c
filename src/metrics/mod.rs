//! Streaming evaluation metrics that merge across batches (and, later, across workers).

mod metric;
mod set;

pub use metric::Metric;
pub use set::Metrics;
