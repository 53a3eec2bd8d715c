//! A linear model's sparse slots: the id columns of its sparse weights' lookup, one per
//! column, one per value of a shaped bucketized column, one per combination of a cross of
//! one, and where each slot's ids start in the one table of sparse weights.

use super::{FeatureColumn, ResolvedColumns};

impl ResolvedColumns {
    /// Where each sparse slot's ids start among the rows of the sparse weights, slot after
    /// slot in column order, and how many rows there are. A shaped bucketized column's
    /// values each have rows of their own (TF's `i × buckets + bucket`); a cross's
    /// combinations share its rows, as they share its hash space.
    pub fn sparse_slot_offsets(&self) -> (Vec<i64>, usize) {
        let (mut offsets, mut rows) = (Vec::new(), 0usize);
        for column in self.columns.iter().filter(|c| self.is_sparse(c)) {
            match column {
                FeatureColumn::Bucketized(c) => {
                    for _ in 0..c.width() {
                        offsets.push(rows as i64);
                        rows += c.num_buckets();
                    }
                }
                FeatureColumn::Crossed(c) => {
                    offsets.extend(std::iter::repeat_n(rows as i64, c.ids_per_example()));
                    rows += c.num_buckets();
                }
                other => {
                    offsets.push(rows as i64);
                    rows += other.num_buckets().unwrap_or(0);
                }
            }
        }
        (offsets, rows)
    }

    /// How many ids the column of each sparse slot gives an example, slot by slot as in
    /// [`sparse_slot_offsets`](Self::sparse_slot_offsets): what a `sparse_combiner`
    /// divides by.
    pub fn sparse_ids_per_column(&self) -> Vec<usize> {
        let mut counts = Vec::new();
        for column in self.columns.iter().filter(|c| self.is_sparse(c)) {
            let ids = match column {
                FeatureColumn::Bucketized(c) => c.width(),
                FeatureColumn::Crossed(c) => c.ids_per_example(),
                _ => 1,
            };
            counts.extend(std::iter::repeat_n(ids, ids));
        }
        counts
    }
}
