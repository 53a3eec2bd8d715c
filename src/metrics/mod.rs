//! Streaming evaluation metrics that merge across batches (and, later, across workers).

mod auc;
mod eval_history;
mod metric;
mod set;

pub use auc::{thresholds, AucState, Curve, NUM_THRESHOLDS};
pub use eval_history::{eval_dir, EvalHistory, EvalRecord};
pub use metric::Metric;
pub use set::Metrics;
