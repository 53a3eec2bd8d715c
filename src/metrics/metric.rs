//! One streaming metric: accumulated over batches, read out once at the end.

use serde::{Deserialize, Serialize};

use super::auc::AucState;
use super::confusion::{ConfusionCounts, Ratio};

/// A mergeable accumulator for one evaluation metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Metric {
    /// Weighted mean: `sum / weight` (accuracy, average loss, label/mean, …).
    Mean {
        /// Sum of weighted values.
        sum: f64,
        /// Sum of weights.
        weight: f64,
    },
    /// `max(m, 1 - m)` of the weighted label mean `m` (TF's `accuracy_baseline`).
    Baseline {
        /// Sum of weighted labels.
        sum: f64,
        /// Sum of weights.
        weight: f64,
    },
    /// `sqrt(sum / weight)`, the root of a weighted mean: TF's `root_mean_squared_error`
    /// from the weighted sum of squared errors.
    RootMean {
        /// Sum of weighted values (squared errors).
        sum: f64,
        /// Sum of weights.
        weight: f64,
    },
    /// A ratio of weighted confusion counts at one threshold (precision, recall, F1).
    Confusion {
        /// The counts so far.
        counts: ConfusionCounts,
        /// Which ratio of them is the metric's value.
        ratio: Ratio,
    },
    /// Area under a curve, from confusion counts at fixed thresholds.
    Auc(AucState),
}

impl Metric {
    /// A mean over `values`, each with weight 1.
    pub fn mean_of(values: impl IntoIterator<Item = f64>) -> Self {
        let (sum, weight) = values
            .into_iter()
            .fold((0.0, 0.0), |(s, w), v| (s + v, w + 1.0));
        Metric::Mean { sum, weight }
    }

    /// A mean holding one `value` with `weight`.
    pub fn weighted(value: f64, weight: f64) -> Self {
        Metric::Mean {
            sum: value * weight,
            weight,
        }
    }

    /// Adds `other`'s observations to this accumulator.
    pub fn merge(&mut self, other: &Metric) {
        match (self, other) {
            (Metric::Mean { sum, weight }, Metric::Mean { sum: s, weight: w })
            | (Metric::Baseline { sum, weight }, Metric::Baseline { sum: s, weight: w })
            | (Metric::RootMean { sum, weight }, Metric::RootMean { sum: s, weight: w }) => {
                *sum += s;
                *weight += w;
            }
            (
                Metric::Confusion { counts, ratio },
                Metric::Confusion {
                    counts: c,
                    ratio: r,
                },
            ) if ratio == r => counts.merge(c),
            (Metric::Auc(a), Metric::Auc(b)) => a.merge(b),
            (this, other) => {
                tracing::warn!("cannot merge metric {other:?} into {this:?}; kept the first")
            }
        }
    }

    /// The metric's value; a mean of nothing is 0, as TF reports it.
    pub fn value(&self) -> f64 {
        let mean = |sum: f64, weight: f64| if weight == 0.0 { 0.0 } else { sum / weight };
        match self {
            Metric::Mean { sum, weight } => mean(*sum, *weight),
            Metric::Baseline { sum, weight } => {
                let m = mean(*sum, *weight);
                m.max(1.0 - m)
            }
            Metric::RootMean { sum, weight } => mean(*sum, *weight).sqrt(),
            Metric::Confusion { counts, ratio } => counts.ratio(*ratio),
            Metric::Auc(state) => state.value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_means_weigh_by_count_not_by_batch() {
        // Batch 1: [1, 2, 3] (mean 2), batch 2: [10] (mean 10).
        // The streaming mean is (1+2+3+10)/4 = 4, not (2+10)/2 = 6.
        let mut m = Metric::mean_of([1.0, 2.0, 3.0]);
        m.merge(&Metric::mean_of([10.0]));
        assert_eq!(m.value(), 4.0);
        assert_eq!(Metric::mean_of([]).value(), 0.0);
        // Squared errors [1, 4] then [16]: RMSE = sqrt(21 / 3), not the mean of 1.58 and 4.
        let mut rmse = Metric::RootMean {
            sum: 5.0,
            weight: 2.0,
        };
        rmse.merge(&Metric::RootMean {
            sum: 16.0,
            weight: 1.0,
        });
        assert_eq!(rmse.value(), 7.0f64.sqrt());
        assert_eq!(
            Metric::weighted(0.5, 4.0),
            Metric::Mean {
                sum: 2.0,
                weight: 4.0
            }
        );
    }
}
