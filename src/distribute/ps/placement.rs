//! Which parameter server holds which variable: TF's `GreedyLoadBalancingStrategy`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checkpoint::Checkpoint;
use crate::error::{Error, Result};

/// Checkpoint metadata key of the placement.
pub const PLACEMENT_KEY: &str = "placement";

/// The ps task of every variable, by variable path.
///
/// Recorded in every checkpoint a parameter-server run writes; a run restoring it with the
/// same number of ps tasks keeps it, one with another number places the variables anew (the
/// checkpoint holds whole variables, so re-sharding is a new placement, nothing more).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Number of ps tasks.
    pub num_ps: usize,
    /// Variable path → ps index.
    pub variables: BTreeMap<String, usize>,
}

impl Placement {
    /// Places `sizes` (variable path, number of elements) on `num_ps` tasks: largest first,
    /// each onto the least-loaded task so far (lowest index on ties), so the bytes each ps
    /// serves stay balanced.
    pub fn greedy(sizes: &[(String, usize)], num_ps: usize) -> Self {
        let num_ps = num_ps.max(1);
        let mut order: Vec<&(String, usize)> = sizes.iter().collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut load = vec![0usize; num_ps];
        let mut variables = BTreeMap::new();
        for (path, size) in order {
            let ps = (0..num_ps)
                .min_by_key(|&i| (load[i], i))
                .expect("at least one ps");
            load[ps] += size;
            variables.insert(path.clone(), ps);
        }
        Self { num_ps, variables }
    }

    /// `recorded` when it fits `sizes` on `num_ps` tasks, a fresh greedy placement otherwise.
    pub fn keep_or_place(
        recorded: Option<Placement>,
        sizes: &[(String, usize)],
        num_ps: usize,
    ) -> Self {
        match recorded {
            Some(placement)
                if placement.num_ps == num_ps
                    && placement.variables.len() == sizes.len()
                    && sizes
                        .iter()
                        .all(|(path, _)| placement.variables.contains_key(path))
                    // A damaged checkpoint may name a ps past the last, which `loads` and
                    // `initialise` would index with.
                    && placement.variables.values().all(|&ps| ps < num_ps) =>
            {
                placement
            }
            _ => Self::greedy(sizes, num_ps),
        }
    }

    /// The ps holding `path`.
    pub fn ps_of(&self, path: &str) -> Option<usize> {
        self.variables.get(path).copied()
    }

    /// Elements each ps holds, given the variables' sizes.
    pub fn loads(&self, sizes: &[(String, usize)]) -> Vec<usize> {
        let mut load = vec![0; self.num_ps];
        for (path, size) in sizes {
            if let Some(ps) = self.ps_of(path) {
                load[ps] += size;
            }
        }
        load
    }

    /// The placement `checkpoint` recorded; none when it recorded none, or one this build
    /// cannot read (the variables are then placed anew).
    pub fn recorded_in(checkpoint: &Checkpoint) -> Option<Self> {
        checkpoint
            .meta
            .get(PLACEMENT_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Records this placement in `checkpoint`, for a run that restores it.
    pub fn record_in(&self, checkpoint: &mut Checkpoint) -> Result<()> {
        checkpoint.meta[PLACEMENT_KEY] = serde_json::to_value(self)
            .map_err(|e| Error::Config(format!("cannot record the placement: {e}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(list: &[(&str, usize)]) -> Vec<(String, usize)> {
        list.iter().map(|(p, s)| (p.to_string(), *s)).collect()
    }

    #[test]
    fn largest_first_onto_the_least_loaded() {
        let vars = sizes(&[("a", 10), ("b", 100), ("c", 60), ("d", 50), ("e", 5)]);
        let placement = Placement::greedy(&vars, 2);
        // b → 0 (100); c → 1 (60); d → 1 (110); a → 0 (110); e → 0 (115).
        assert_eq!(placement.ps_of("b"), Some(0));
        assert_eq!(placement.ps_of("c"), Some(1));
        assert_eq!(placement.ps_of("d"), Some(1));
        assert_eq!(placement.ps_of("a"), Some(0));
        assert_eq!(placement.ps_of("e"), Some(0));
        assert_eq!(placement.loads(&vars), vec![115, 110]);
    }

    #[test]
    fn more_ps_than_variables_leaves_some_empty() {
        let vars = sizes(&[("w", 8), ("b", 2)]);
        let placement = Placement::greedy(&vars, 3);
        assert_eq!(placement.loads(&vars), vec![8, 2, 0]);
    }

    #[test]
    fn a_recorded_placement_is_kept_only_when_it_fits() {
        let vars = sizes(&[("w", 8), ("b", 2), ("c", 1)]);
        let mut recorded = Placement::greedy(&vars, 2);
        recorded.variables.insert("w".into(), 1);
        recorded.variables.insert("b".into(), 0);
        let kept = Placement::keep_or_place(Some(recorded.clone()), &vars, 2);
        assert_eq!(kept, recorded);
        let resharded = Placement::keep_or_place(Some(recorded), &vars, 3);
        assert_eq!(resharded, Placement::greedy(&vars, 3));
        assert_eq!(resharded.num_ps, 3);
    }

    #[test]
    fn a_recorded_placement_naming_a_ps_past_the_last_is_placed_anew() {
        let vars = sizes(&[("w", 8), ("b", 2)]);
        let mut recorded = Placement::greedy(&vars, 2);
        recorded.variables.insert("w".into(), 7);
        let placed = Placement::keep_or_place(Some(recorded), &vars, 2);
        assert_eq!(placed, Placement::greedy(&vars, 2));
        assert_eq!(placed.loads(&vars), vec![8, 2]);
    }

    #[test]
    fn a_checkpoint_gives_back_the_placement_recorded_in_it() {
        let placement = Placement::greedy(&sizes(&[("w", 8), ("b", 2)]), 2);
        let mut checkpoint = Checkpoint::new(3, serde_json::json!({ "optimizer": "sgd" }));
        assert_eq!(Placement::recorded_in(&checkpoint), None, "none recorded");
        placement.record_in(&mut checkpoint).unwrap();
        assert_eq!(Placement::recorded_in(&checkpoint), Some(placement));
        assert_eq!(checkpoint.meta["optimizer"], "sgd", "other metadata kept");
    }

    #[test]
    fn an_unreadable_recorded_placement_counts_as_none() {
        let checkpoint = Checkpoint::new(3, serde_json::json!({ PLACEMENT_KEY: "two ps" }));
        assert_eq!(Placement::recorded_in(&checkpoint), None);
    }
}
