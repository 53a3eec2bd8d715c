//! The canned estimators' heads: TF's choice for a number of classes, and the checks a
//! saved classifier's head gets.

use estimator::head::{BinaryClassHead, Head, MultiClassHead, RegressionHead};
use estimator::{Error, Result};

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

/// Checks that `vocabulary` names each of `n_classes` classes once.
pub(crate) fn check_label_vocabulary(vocabulary: &[String], n_classes: usize) -> Result<()> {
    if vocabulary.len() != n_classes {
        return Err(Error::Config(format!(
            "label vocabulary {vocabulary:?} has {} entries for {n_classes} classes",
            vocabulary.len(),
        )));
    }
    let mut seen = std::collections::HashSet::with_capacity(vocabulary.len());
    match vocabulary.iter().find(|v| !seen.insert(v.as_str())) {
        Some(dup) => Err(Error::Config(format!("label vocabulary has '{dup}' twice"))),
        None => Ok(()),
    }
}

/// Checks a classifier's saved head as `new`, `with_label_vocabulary` and `with_thresholds`
/// check theirs: a short vocabulary would name a class past its end.
pub(crate) fn check_classification_head(head: &Head) -> Result<()> {
    let (n_classes, vocabulary) = match head {
        Head::Binary(h) => {
            h.check()?;
            (2, h.label_vocabulary.as_deref())
        }
        Head::MultiClass(h) => (h.n_classes, h.label_vocabulary.as_deref()),
        Head::Regression(_) => {
            return Err(Error::Config("a classifier has a regression head".into()))
        }
    };
    classification_head(n_classes)?;
    match vocabulary {
        Some(vocabulary) => check_label_vocabulary(vocabulary, n_classes),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_classes_get_a_binary_head_and_fewer_are_an_error() {
        assert!(matches!(classification_head(2).unwrap(), Head::Binary(_)));
        assert_eq!(classification_head(5).unwrap().logits_dimension(), 5);
        let err = classification_head(1).unwrap_err().to_string();
        assert!(err.contains("n_classes is 1: a classifier needs at least 2 classes"));
    }
}
