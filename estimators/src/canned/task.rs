//! [`Task`]: whether a canned estimator classifies or regresses, as a type.

use std::fmt::Debug;

use estimator::head::Head;
use estimator::{Error, Result};
use serde::{Deserialize, Serialize};

use super::heads::check_classification_head;

/// The kind of head a canned estimator has, at the type level, so that classifier-only
/// settings (`with_label_vocabulary`) exist only on classifiers.
pub trait Task: Clone + Debug + Default + PartialEq + Send + Sync + 'static {
    /// The task's suffix in TF's canned estimator names (`Classifier` in `DNNClassifier`).
    const NAME: &'static str;

    /// Checks that a saved `head` is one of this task's.
    fn check_head(head: &Head) -> Result<()>;
}

/// Classification: a multi-class head (a binary one for two classes).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Classification;

/// Regression: a squared-error head.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regression;

impl Task for Classification {
    const NAME: &'static str = "Classifier";

    fn check_head(head: &Head) -> Result<()> {
        check_classification_head(head)
    }
}

impl Task for Regression {
    const NAME: &'static str = "Regressor";

    /// The regressors' head: one target per example, as the labels carry.
    fn check_head(head: &Head) -> Result<()> {
        match head {
            Head::Regression(h) if h.label_dimension == 1 => Ok(()),
            _ => Err(Error::Config(
                "a regressor's head must be a regression head of one target".into(),
            )),
        }
    }
}
