//! Classifier heads and the classifier-only setting, the label vocabulary.

use estimator::head::Head;
use estimator::{Error, Result};

use super::heads::check_label_vocabulary;
use super::{CannedEstimator, Classification};
use crate::network::Network;

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
        check_label_vocabulary(&vocabulary, self.n_classes())?;
        let head = self.head_mut();
        *head = match head.clone() {
            Head::Binary(h) => Head::Binary(h.with_label_vocabulary(vocabulary)),
            Head::MultiClass(h) => Head::MultiClass(h.with_label_vocabulary(vocabulary)),
            regression => regression,
        };
        Ok(self)
    }

    /// Also evaluates a binary classifier's decisions above each of `thresholds` (TF's
    /// `BinaryClassHead(thresholds=…)`, the head of TF's `DNNEstimator` and friends): the
    /// metrics `accuracy/positive_threshold_<t>`, `precision/…` and `recall/…`. An error
    /// for more than two classes, or a threshold that is not strictly between 0 and 1.
    pub fn with_thresholds(mut self, thresholds: impl IntoIterator<Item = f32>) -> Result<Self> {
        let n_classes = self.n_classes();
        let head = self.head_mut();
        *head = match head.clone() {
            Head::Binary(h) => Head::Binary(h.with_thresholds(thresholds)?),
            _ => {
                return Err(Error::Config(format!(
                    "thresholds are for a binary classifier: this one has {n_classes} classes"
                )))
            }
        };
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use datasets::Schema;
    use estimator::RunConfig;

    use estimator::head::{BinaryClassHead, MultiClassHead};

    use super::*;
    use crate::canned::{BaselineClassifier, LinearClassifier};
    use crate::feature_column::numeric_column;

    fn schema() -> Schema {
        Schema::new().float("x").int("y").label("y")
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

    #[test]
    fn thresholds_are_for_a_binary_classifier_and_checked_again_when_loaded() {
        let three = BaselineClassifier::new(RunConfig::new("unused"), &schema(), 3).unwrap();
        let err = three.with_thresholds([0.3]).unwrap_err().to_string();
        assert!(err.contains("thresholds are for a binary classifier: this one has 3 classes"));
        let two = BaselineClassifier::new(RunConfig::new("unused"), &schema(), 2).unwrap();
        let err = two.clone().with_thresholds([0.3, 1.5]).unwrap_err();
        assert!(err
            .to_string()
            .contains("threshold 1.5 must be above 0 and below 1"));
        let two = two.with_thresholds([0.3, 0.7]).unwrap();
        assert!(matches!(two.head(), Head::Binary(h) if h.thresholds == [0.3, 0.7]));
        // A saved head edited by hand is refused where it is read.
        let mut edited = BinaryClassHead::new();
        edited.thresholds = vec![0.0];
        let err = super::super::heads::check_classification_head(&Head::Binary(edited));
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("threshold 0 must be above 0"));
    }
}
