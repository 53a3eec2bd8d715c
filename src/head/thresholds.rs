//! A binary head's extra decision thresholds (TF's `BinaryClassHead(thresholds=…)`): the
//! accuracy, precision and recall of deciding "positive" when the positive class's
//! probability is above each, beside the metrics at 0.5.

use super::host::WeightedSum;
use crate::error::{Error, Result};
use crate::metrics::{ConfusionCounts, Metric, Metrics, Ratio};

/// Checks that every threshold is a probability strictly between 0 and 1, as TF's.
pub(crate) fn check_thresholds(thresholds: &[f32]) -> Result<()> {
    match thresholds.iter().find(|t| !(**t > 0.0 && **t < 1.0)) {
        Some(t) => Err(Error::Config(format!(
            "binary head threshold {t} must be above 0 and below 1: thresholds are probabilities \
             of the positive class"
        ))),
        None => Ok(()),
    }
}

/// The weighted counts behind each threshold's metrics, over a batch.
pub(super) struct AtThresholds<'a> {
    thresholds: &'a [f32],
    accuracy: Vec<WeightedSum>,
    counts: Vec<ConfusionCounts>,
}

impl<'a> AtThresholds<'a> {
    pub(super) fn new(thresholds: &'a [f32]) -> Self {
        Self {
            thresholds,
            accuracy: vec![WeightedSum::default(); thresholds.len()],
            counts: vec![ConfusionCounts::default(); thresholds.len()],
        }
    }

    /// Counts one example of positive-class probability `p` with `weight`.
    pub(super) fn add(&mut self, p: f32, positive: bool, weight: f64) {
        let each = (self.thresholds.iter()).zip(self.accuracy.iter_mut().zip(&mut self.counts));
        for (&threshold, (accuracy, counts)) in each {
            let decided = p > threshold;
            accuracy.add(f64::from(u8::from(decided == positive)), weight);
            counts.add(decided, positive, weight);
        }
    }

    /// `accuracy/positive_threshold_<t>`, `precision/…` and `recall/…` for each threshold
    /// (TF's names, `<t>` as Python's `%g`).
    pub(super) fn into_metrics(self, mut metrics: Metrics) -> Metrics {
        let each = (self.thresholds.iter()).zip(self.accuracy.into_iter().zip(self.counts));
        for (&threshold, (accuracy, counts)) in each {
            let t = percent_g(f64::from(threshold));
            let confusion = |ratio| Metric::Confusion { counts, ratio };
            metrics.add(format!("accuracy/positive_threshold_{t}"), accuracy.mean());
            metrics.add(
                format!("precision/positive_threshold_{t}"),
                confusion(Ratio::Precision),
            );
            metrics.add(
                format!("recall/positive_threshold_{t}"),
                confusion(Ratio::Recall),
            );
        }
        metrics
    }
}

/// `x` as Python's `'%g' % x`: six significant digits, trailing zeros dropped, in exponent
/// form when the exponent is below -4 or from 6.
fn percent_g(x: f64) -> String {
    let scientific = format!("{x:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        match s.contains('.') {
            true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => s.to_string(),
        }
    };
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exponent.abs());
    }
    trim(&format!("{x:.*}", (5 - exponent) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_named_as_python_formats_them() {
        let cases = [
            (0.5, "0.5"),
            (0.25, "0.25"),
            (f64::from(0.3f32), "0.3"),
            (0.123456789, "0.123457"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000012345, "1.2345e-05"),
            (0.9999999, "1"),
            (1234567.0, "1.23457e+06"),
        ];
        for (x, python) in cases {
            assert_eq!(percent_g(x), python, "{x}");
        }
    }

    #[test]
    fn only_probabilities_strictly_inside_zero_and_one_are_thresholds() {
        assert!(check_thresholds(&[0.1, 0.5, 0.99]).is_ok());
        for bad in [0.0, 1.0, -0.5, 2.0, f32::NAN] {
            let err = check_thresholds(&[0.5, bad]).unwrap_err().to_string();
            assert!(
                err.contains(&format!("threshold {bad} must be above 0 and below 1")),
                "{err}"
            );
        }
    }
}
