//! Heads: loss, eval metrics and predictions for a logits tensor (multi-class, binary,
//! regression) — what keeps canned and custom estimators small.

mod base;
mod binary;
mod host;
mod label_fault;
mod labels;
mod multi_class;
mod prediction;
mod regression;
mod thresholds;
mod vocabulary;

#[cfg(test)]
mod merge_tests;

pub use base::Head;
pub use binary::BinaryClassHead;
pub use label_fault::LabelFault;
pub use labels::HeadLabels;
pub use multi_class::{MultiClassHead, TOP_K};
pub use prediction::HeadPrediction;
pub use regression::{RegressionHead, RegressionLoss};
