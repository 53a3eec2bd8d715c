//! [`Task`]: whether a canned estimator classifies or regresses, as a type.

use std::fmt::Debug;

use serde::{Deserialize, Serialize};

/// The kind of head a canned estimator has, at the type level, so that classifier-only
/// settings (`with_label_vocabulary`) exist only on classifiers.
pub trait Task: Clone + Debug + Default + PartialEq + Send + Sync + 'static {
    /// The task's suffix in TF's canned estimator names (`Classifier` in `DNNClassifier`).
    const NAME: &'static str;
}

/// Classification: a multi-class head (a binary one for two classes).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Classification;

/// Regression: a squared-error head.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regression;

impl Task for Classification {
    const NAME: &'static str = "Classifier";
}

impl Task for Regression {
    const NAME: &'static str = "Regressor";
}
