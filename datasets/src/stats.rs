//! Feature statistics (mean, standard deviation) for normalisation.

use serde::{Deserialize, Serialize};

use crate::{Dataset, Error, Example};

/// Mean and standard deviation of every numeric feature (`Example::dense`), computed over
/// one pass; serialisable so it can be saved with a model and applied at serving time.
///
/// The standard deviation is the population one (divide by `count`), as scikit-learn's
/// `StandardScaler`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeatureStats {
    /// Feature names, in `dense` order (empty if not given).
    #[serde(default)]
    pub names: Vec<String>,
    /// Examples seen.
    pub count: u64,
    /// Mean of each feature.
    pub mean: Vec<f32>,
    /// Standard deviation of each feature.
    pub std: Vec<f32>,
}

impl FeatureStats {
    /// Reads `dataset` to its end and computes the statistics of `Example::dense`.
    ///
    /// Pass `&mut ds` to keep the dataset. Errors from the dataset are returned, as is an
    /// example whose `dense` length differs from the first one's.
    pub fn compute<D: Dataset<Item = Example>>(mut dataset: D) -> Result<Self, Error> {
        let mut acc = StatsAccumulator::default();
        while let Some(example) = dataset.next_item() {
            acc.add(&example?.dense)?;
        }
        Ok(acc.finish())
    }

    /// The same statistics with feature names attached (e.g. `schema.dense_names()`).
    pub fn with_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Number of features.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    /// Whether there are no features.
    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }

    /// Standardises `dense` in place: `(x - mean) / std`, with a zero `std` treated as 1.
    /// Extra values beyond [`FeatureStats::len`] are left as they are.
    pub fn normalize(&self, dense: &mut [f32]) {
        for ((x, &m), &s) in dense.iter_mut().zip(&self.mean).zip(&self.std) {
            let s = if s > 0.0 && s.is_finite() { s } else { 1.0 };
            *x = (*x - m) / s;
        }
    }
}

/// Welford's streaming mean and variance over rows of `f32`, in `f64`.
#[derive(Clone, Debug, Default)]
pub struct StatsAccumulator {
    count: u64,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl StatsAccumulator {
    /// An empty accumulator; the first row fixes the number of features.
    pub fn new() -> Self {
        StatsAccumulator::default()
    }

    /// Adds one row. A row of a different length than the first is an error.
    pub fn add(&mut self, row: &[f32]) -> Result<(), Error> {
        if self.count == 0 {
            self.mean = vec![0.0; row.len()];
            self.m2 = vec![0.0; row.len()];
        } else if row.len() != self.mean.len() {
            return Err(Error::InvalidArgument(format!(
                "example {} has {} dense values, the first had {}",
                self.count + 1,
                row.len(),
                self.mean.len()
            )));
        }
        self.count += 1;
        let n = self.count as f64;
        for ((&x, mean), m2) in row.iter().zip(&mut self.mean).zip(&mut self.m2) {
            let x = f64::from(x);
            let delta = x - *mean;
            *mean += delta / n;
            *m2 += delta * (x - *mean);
        }
        Ok(())
    }

    /// Rows added so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The statistics so far.
    pub fn finish(&self) -> FeatureStats {
        let n = self.count.max(1) as f64;
        FeatureStats {
            names: Vec::new(),
            count: self.count,
            mean: self.mean.iter().map(|&m| m as f32).collect(),
            std: self.m2.iter().map(|&m2| (m2 / n).sqrt() as f32).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{from_vec, DatasetExt, Label};

    fn ex(dense: Vec<f32>) -> Example {
        Example {
            dense,
            categorical: vec![],
            label: Label::None,
        }
    }

    #[test]
    fn mean_and_population_std() {
        let rows = vec![
            ex(vec![1.0, 10.0]),
            ex(vec![2.0, 10.0]),
            ex(vec![3.0, 10.0]),
        ];
        let mut ds = from_vec(rows);
        let stats = FeatureStats::compute(&mut ds)
            .unwrap()
            .with_names(["a", "b"]);
        assert_eq!(stats.count, 3);
        assert_eq!(stats.mean, vec![2.0, 10.0]);
        assert!((stats.std[0] - (2.0f32 / 3.0).sqrt()).abs() < 1e-6);
        assert_eq!(stats.std[1], 0.0);
        assert_eq!(stats.names, ["a", "b"]);
        assert_eq!(stats.len(), 2);
        let mut row = vec![3.0, 12.0, 99.0];
        stats.normalize(&mut row);
        assert!((row[0] - 1.0 / (2.0f32 / 3.0).sqrt()).abs() < 1e-5);
        assert_eq!(row[1], 2.0);
        assert_eq!(row[2], 99.0);
        let json = serde_json::to_string(&stats).unwrap();
        assert_eq!(serde_json::from_str::<FeatureStats>(&json).unwrap(), stats);
        // The dataset is left at its end.
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn numerically_stable_with_a_large_offset() {
        let rows: Vec<Example> = (0..1000)
            .map(|i| ex(vec![1.0e6 + (i % 2) as f32]))
            .collect();
        let stats = FeatureStats::compute(from_vec(rows)).unwrap();
        assert!((stats.mean[0] - 1.0e6 - 0.5).abs() < 1e-3);
        assert!((stats.std[0] - 0.5).abs() < 1e-6);
    }

    #[test]
    fn empty_mismatched_and_failing_inputs() {
        let empty = FeatureStats::compute(from_vec(Vec::<Example>::new())).unwrap();
        assert_eq!(empty.count, 0);
        assert!(empty.is_empty());
        let ragged = from_vec(vec![ex(vec![1.0]), ex(vec![1.0, 2.0])]);
        let err = FeatureStats::compute(ragged).unwrap_err();
        assert!(err
            .to_string()
            .contains("example 2 has 2 dense values, the first had 1"));
        let failing = from_vec(vec![1]).try_map(|_| Err::<Example, _>(Error::Custom("x".into())));
        assert!(FeatureStats::compute(failing).is_err());
        let mut acc = StatsAccumulator::new();
        acc.add(&[1.0]).unwrap();
        assert_eq!(acc.count(), 1);
        assert_eq!(acc.finish().std, vec![0.0]);
    }
}
