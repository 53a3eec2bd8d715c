//! Area under the ROC or precision-recall curve, from confusion counts at fixed thresholds
//! (Keras' `AUC` with 200 thresholds and its interpolation, as TF's binary head reports).

use serde::{Deserialize, Serialize};

/// Which curve the area is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Curve {
    /// True-positive rate against false-positive rate.
    Roc,
    /// Precision against recall.
    PrecisionRecall,
}

/// Number of thresholds, as TF's default.
pub const NUM_THRESHOLDS: usize = 200;

/// Weighted confusion counts at each threshold; they add up across batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AucState {
    /// Which area to report.
    pub curve: Curve,
    /// True positives at each threshold.
    pub tp: Vec<f64>,
    /// False positives at each threshold.
    pub fp: Vec<f64>,
    /// True negatives at each threshold.
    pub tn: Vec<f64>,
    /// False negatives at each threshold.
    pub fn_: Vec<f64>,
}

/// The thresholds: just below 0, `i/(n-1)` for `i` in `1..n-1`, just above 1.
pub fn thresholds() -> Vec<f64> {
    let n = NUM_THRESHOLDS;
    let mut t = vec![-1e-7];
    t.extend((1..n - 1).map(|i| i as f64 / (n - 1) as f64));
    t.push(1.0 + 1e-7);
    t
}

impl AucState {
    /// Counts for `(probability, label in {0,1}, weight)` observations.
    pub fn from_observations(
        curve: Curve,
        observations: impl IntoIterator<Item = (f32, f32, f32)>,
    ) -> Self {
        let thresholds = thresholds();
        let n = thresholds.len();
        let mut state = Self {
            curve,
            tp: vec![0.0; n],
            fp: vec![0.0; n],
            tn: vec![0.0; n],
            fn_: vec![0.0; n],
        };
        for (p, label, w) in observations {
            let (p, w) = (p as f64, w as f64);
            let positive = label > 0.5;
            for (i, t) in thresholds.iter().enumerate() {
                match (p > *t, positive) {
                    (true, true) => state.tp[i] += w,
                    (true, false) => state.fp[i] += w,
                    (false, false) => state.tn[i] += w,
                    (false, true) => state.fn_[i] += w,
                }
            }
        }
        state
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &AucState) {
        for (a, b) in [
            (&mut self.tp, &other.tp),
            (&mut self.fp, &other.fp),
            (&mut self.tn, &other.tn),
            (&mut self.fn_, &other.fn_),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }

    /// The area.
    pub fn value(&self) -> f64 {
        match self.curve {
            Curve::Roc => self.roc_auc(),
            Curve::PrecisionRecall => self.pr_auc(),
        }
    }

    fn roc_auc(&self) -> f64 {
        let rate = |a: f64, b: f64| if a + b > 0.0 { a / (a + b) } else { 0.0 };
        let tpr: Vec<f64> = self
            .tp
            .iter()
            .zip(&self.fn_)
            .map(|(t, f)| rate(*t, *f))
            .collect();
        let fpr: Vec<f64> = self
            .fp
            .iter()
            .zip(&self.tn)
            .map(|(f, t)| rate(*f, *t))
            .collect();
        (0..tpr.len() - 1)
            .map(|i| (fpr[i] - fpr[i + 1]) * (tpr[i] + tpr[i + 1]) / 2.0)
            .sum()
    }

    /// Davis & Goadrich interpolation, as Keras' `interpolate_pr_auc`.
    fn pr_auc(&self) -> f64 {
        let n = self.tp.len();
        let div = |a: f64, b: f64| if b != 0.0 { a / b } else { 0.0 };
        let p: Vec<f64> = self.tp.iter().zip(&self.fp).map(|(t, f)| t + f).collect();
        let mut area = 0.0;
        for i in 0..n - 1 {
            let dtp = self.tp[i] - self.tp[i + 1];
            let dp = p[i] - p[i + 1];
            let slope = div(dtp, dp.max(0.0));
            let intercept = self.tp[i + 1] - slope * p[i + 1];
            let ratio = if p[i] > 0.0 && p[i + 1] > 0.0 {
                div(p[i], p[i + 1].max(0.0))
            } else {
                1.0
            };
            area += div(
                slope * (dtp + intercept * ratio.ln()),
                (self.tp[i + 1] + self.fn_[i + 1]).max(0.0),
            );
        }
        area
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roc_auc_of_a_hand_checked_case() {
        // Positives score 0.35 and 0.8, negatives 0.1 and 0.4. Of the 4 (positive, negative)
        // pairs, 3 are ranked correctly (0.35 < 0.4 is the one that is not): AUC = 3/4.
        let obs = [
            (0.1, 0.0, 1.0),
            (0.4, 0.0, 1.0),
            (0.35, 1.0, 1.0),
            (0.8, 1.0, 1.0),
        ];
        let auc = AucState::from_observations(Curve::Roc, obs);
        assert!((auc.value() - 0.75).abs() < 1e-9, "{}", auc.value());
        // Split into two batches and merged: the same counts.
        let mut a = AucState::from_observations(Curve::Roc, obs[..2].iter().copied());
        a.merge(&AucState::from_observations(
            Curve::Roc,
            obs[2..].iter().copied(),
        ));
        assert_eq!(a, auc);
    }

    #[test]
    fn perfect_and_random_rankings() {
        let perfect = [(0.2, 0.0, 1.0), (0.9, 1.0, 1.0)];
        assert!((AucState::from_observations(Curve::Roc, perfect).value() - 1.0).abs() < 1e-9);
        assert!(
            (AucState::from_observations(Curve::PrecisionRecall, perfect).value() - 1.0).abs()
                < 1e-6
        );
        let tied = [(0.5, 0.0, 1.0), (0.5, 1.0, 1.0)];
        assert!((AucState::from_observations(Curve::Roc, tied).value() - 0.5).abs() < 1e-9);
    }
}
