//! Streaming evaluation metrics that merge across batches and across workers: each holds the
//! sums or counts it streams, and derived metrics (RMSE, precision, recall, F1, AUC) are read
//! from the merged state, never averaged from per-batch values.

mod auc;
mod confusion;
mod eval_history;
mod metric;
mod set;

pub use auc::{thresholds, AucState, Curve, NUM_THRESHOLDS};
pub use confusion::{ConfusionCounts, Ratio};
pub use eval_history::{eval_dir, EvalHistory, EvalRecord};
pub use metric::Metric;
pub use set::Metrics;
