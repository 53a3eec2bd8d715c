//! Weighted confusion counts of a binary decision at one threshold, and the ratios read from
//! them (precision, recall, F1).
//!
//! The counts are what streams and merges: a ratio is read once, from the counts of every
//! batch and every worker, never averaged from per-batch ratios (which would weigh a batch of
//! 1 like a batch of 1000).

use serde::{Deserialize, Serialize};

/// Weighted counts of true positives, false positives and false negatives (true negatives
/// enter none of the ratios).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfusionCounts {
    /// Weight of examples predicted positive that are positive.
    pub true_positives: f64,
    /// Weight of examples predicted positive that are negative.
    pub false_positives: f64,
    /// Weight of examples predicted negative that are positive.
    pub false_negatives: f64,
}

/// Which ratio of [`ConfusionCounts`] a metric reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ratio {
    /// `tp / (tp + fp)` (TF's `precision`).
    Precision,
    /// `tp / (tp + fn)` (TF's `recall`).
    Recall,
    /// `2 tp / (2 tp + fp + fn)`, the harmonic mean of precision and recall.
    F1,
}

impl ConfusionCounts {
    /// Counts one example with `weight`.
    pub fn add(&mut self, predicted_positive: bool, positive: bool, weight: f64) {
        match (predicted_positive, positive) {
            (true, true) => self.true_positives += weight,
            (true, false) => self.false_positives += weight,
            (false, true) => self.false_negatives += weight,
            (false, false) => {}
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &ConfusionCounts) {
        self.true_positives += other.true_positives;
        self.false_positives += other.false_positives;
        self.false_negatives += other.false_negatives;
    }

    /// The ratio; 0 when its denominator is 0 (TF's `div_no_nan`: a head that never predicts
    /// positive has precision 0, not NaN).
    pub fn ratio(&self, ratio: Ratio) -> f64 {
        let tp = self.true_positives;
        let (numerator, denominator) = match ratio {
            Ratio::Precision => (tp, tp + self.false_positives),
            Ratio::Recall => (tp, tp + self.false_negatives),
            Ratio::F1 => (
                2.0 * tp,
                2.0 * tp + self.false_positives + self.false_negatives,
            ),
        };
        if denominator == 0.0 {
            0.0
        } else {
            numerator / denominator
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_come_from_merged_counts() {
        // Batch 1: one true positive. Batch 2: one true positive, three false positives.
        // Merged precision = 2 / 5; the mean of the batches' precisions would be (1 + 1/4) / 2.
        let mut a = ConfusionCounts::default();
        a.add(true, true, 1.0);
        let mut b = ConfusionCounts::default();
        b.add(true, true, 1.0);
        for _ in 0..3 {
            b.add(true, false, 1.0);
        }
        b.add(false, true, 2.0);
        b.add(false, false, 5.0);
        a.merge(&b);
        assert_eq!(a.ratio(Ratio::Precision), 2.0 / 5.0);
        assert_eq!(a.ratio(Ratio::Recall), 2.0 / 4.0);
        // F1 = 2PR / (P + R) = 2 · 0.4 · 0.5 / 0.9 = 4/9 = 2·2 / (2·2 + 3 + 2).
        assert!((a.ratio(Ratio::F1) - 4.0 / 9.0).abs() < 1e-15);
        assert_eq!(ConfusionCounts::default().ratio(Ratio::Precision), 0.0);
        assert_eq!(ConfusionCounts::default().ratio(Ratio::F1), 0.0);
    }
}
