//! A named set of streaming metrics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Metric;

/// Metrics by name (TF's names: `accuracy`, `average_loss`, …), merged batch by batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    entries: BTreeMap<String, Metric>,
}

impl Metrics {
    /// No metrics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or merges into) the metric `name`.
    pub fn with(mut self, name: impl Into<String>, metric: Metric) -> Self {
        self.add(name, metric);
        self
    }

    /// Adds (or merges into) the metric `name`.
    pub fn add(&mut self, name: impl Into<String>, metric: Metric) {
        match self.entries.entry(name.into()) {
            std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().merge(&metric),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(metric);
            }
        }
    }

    /// Merges every metric of `other` into this set.
    pub fn merge(&mut self, other: &Metrics) {
        for (name, metric) in &other.entries {
            self.add(name.clone(), metric.clone());
        }
    }

    /// The current value of every metric.
    pub fn values(&self) -> BTreeMap<String, f64> {
        self.entries
            .iter()
            .map(|(k, m)| (k.clone(), m.value()))
            .collect()
    }

    /// Whether no metric has been added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_sets_merges_same_names_and_keeps_others() {
        let mut a = Metrics::new().with("accuracy", Metric::mean_of([1.0, 0.0]));
        let b = Metrics::new()
            .with("accuracy", Metric::mean_of([1.0, 1.0]))
            .with("label/mean", Metric::mean_of([2.0]));
        a.merge(&b);
        let values = a.values();
        assert_eq!(values["accuracy"], 0.75);
        assert_eq!(values["label/mean"], 2.0);
    }
}
