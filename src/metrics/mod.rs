//! Streaming evaluation metrics that merge across batches (and, later, across workers).

mod metric;
mod metrics;

pub use metric::Metric;
pub use metrics::Metrics;
