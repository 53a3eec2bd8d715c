//! Classifier heads and the classifier-only setting, the label vocabulary.

use estimator::head::{BinaryClassHead, Head, MultiClassHead, RegressionHead};
use estimator::{Error, Result};

use super::{CannedEstimator, Classification};
use crate::network::Network;

/// TF's choice of head for `n_classes`: binary (one logistic logit) for 2, multi-class
/// (softmax) above; fewer than 2 is an error.
pub(crate) fn classification_head(n_classes: usize) -> Result<Head> {
    match n_classes {
        0 | 1 => Err(Error::Config(format!(
            "n_classes is {n_classes}: a classifier needs at least 2 classes"
        ))),
        2 => Ok(Head::Binary(BinaryClassHead::new())),
        n => Ok(Head::MultiClass(MultiClassHead::new(n))),
    }
}

/// The squared-error head of the regressors (one target per example).
pub(crate) fn regression_head() -> Head {
    Head::Regression(RegressionHead::new())
}

impl<N: Network> CannedEstimator<N, Classification> {
    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        match self.head() {
            Head::Binary(_) => 2,
            head => head.logits_dimension(),
        }
    }

    /// String labels: class `i` is `vocabulary[i]` (one distinct name per class).
    pub fn with_label_vocabulary<S: Into<String>>(
        mut self,
        vocabulary: impl IntoIterator<Item = S>,
    ) -> Result<Self> {
        let vocabulary: Vec<String> = vocabulary.into_iter().map(Into::into).collect();
        if vocabulary.len() != self.n_classes() {
            return Err(Error::Config(format!(
                "label vocabulary {vocabulary:?} has {} entries for {} classes",
                vocabulary.len(),
                self.n_classes()
            )));
        }
        if let Some(dup) = vocabulary
            .iter()
            .enumerate()
            .find_map(|(i, v)| vocabulary[..i].contains(v).then_some(v))
        {
            return Err(Error::Config(format!("label vocabulary has '{dup}' twice")));
        }
        let head = self.head_mut();
        *head = match head.clone() {
            Head::Binary(h) => Head::Binary(h.with_label_vocabulary(vocabulary)),
            Head::MultiClass(h) => Head::MultiClass(h.with_label_vocabulary(vocabulary)),
            regression => regression,
        };
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use datasets::Schema;
    use estimator::RunConfig;

    use super::*;
    use crate::canned::{BaselineClassifier, LinearClassifier};
    use crate::feature_column::numeric_column;

    fn schema() -> Schema {
        Schema::new().float("x").int("y").label("y")
    }

    #[test]
    fn two_classes_get_a_binary_head_and_fewer_are_an_error() {
        assert!(matches!(classification_head(2).unwrap(), Head::Binary(_)));
        assert_eq!(classification_head(5).unwrap().logits_dimension(), 5);
        let err = classification_head(1).unwrap_err().to_string();
        assert!(err.contains("n_classes is 1: a classifier needs at least 2 classes"));
    }

    #[test]
    fn the_label_vocabulary_must_name_each_class_once() {
        let est = BaselineClassifier::new(RunConfig::new("unused"), &schema(), 3).unwrap();
        assert_eq!(est.n_classes(), 3);
        let err = est
            .clone()
            .with_label_vocabulary(["a", "b"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("has 2 entries for 3 classes"));
        let err = est
            .clone()
            .with_label_vocabulary(["a", "b", "a"])
            .unwrap_err();
        assert!(err.to_string().contains("'a' twice"));
        let est = est.with_label_vocabulary(["a", "b", "c"]).unwrap();
        assert_eq!(
            est.head(),
            &Head::MultiClass(MultiClassHead::new(3).with_label_vocabulary(vec![
                "a".into(),
                "b".into(),
                "c".into()
            ]))
        );
        let binary = LinearClassifier::new(
            RunConfig::new("unused"),
            &schema(),
            vec![numeric_column("x").into()],
            2,
        )
        .unwrap()
        .with_label_vocabulary(["no", "yes"])
        .unwrap();
        assert_eq!(binary.n_classes(), 2);
        assert_eq!(
            binary.head(),
            &Head::Binary(
                BinaryClassHead::new().with_label_vocabulary(vec!["no".into(), "yes".into()])
            )
        );
    }
}
