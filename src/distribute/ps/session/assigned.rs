//! Which untrained values a training task assigns on the ps tasks: those its forward pass
//! moves (batch normalisation's running statistics), never frozen ones, which would cross
//! the wire at every step for nothing. On the first step and every [`RECHECK_EVERY`]th
//! after it all untrained values are compared before and after the step, by checksum; in
//! between only those found moving are read and sent.

use std::collections::{BTreeMap, BTreeSet};

use burn::module::Module;
use burn::tensor::backend::Backend;

use crate::state::{untrained_values, untrained_values_where, values_crc32c as checksum};

/// Steps between two comparisons of every untrained value: a value that starts moving late
/// reaches the ps tasks within this many steps.
pub const RECHECK_EVERY: u64 = 100;

/// See the [module docs](self).
#[derive(Debug, Default)]
pub(super) struct AssignedValues {
    /// The paths a step was seen to move.
    moving: BTreeSet<String>,
    /// Every untrained value's checksum before this step, on a step that compares them.
    before: Option<BTreeMap<String, u32>>,
    /// Steps begun.
    steps: u64,
}

impl AssignedValues {
    /// A step begins from `model` (as pulled).
    pub fn before_step<B: Backend, M: Module<B>>(&mut self, model: &M) {
        let compare = self.steps.is_multiple_of(RECHECK_EVERY);
        self.before = compare.then(|| checksums(&untrained_values(model)));
        self.steps += 1;
    }

    /// The untrained values of `model` to assign after the step: those it moved, or moved
    /// on a step compared before.
    pub fn after_step<B: Backend, M: Module<B>>(
        &mut self,
        model: &M,
    ) -> BTreeMap<String, Vec<f32>> {
        let Some(before) = self.before.take() else {
            if self.moving.is_empty() {
                return BTreeMap::new();
            }
            return untrained_values_where(model, |path| self.moving.contains(path));
        };
        let mut now = untrained_values(model);
        for (path, values) in &now {
            if before.get(path) != Some(&checksum(values)) {
                self.moving.insert(path.clone());
            }
        }
        now.retain(|path, _| self.moving.contains(path));
        now
    }
}

fn checksums(values: &BTreeMap<String, Vec<f32>>) -> BTreeMap<String, u32> {
    values
        .iter()
        .map(|(path, values)| (path.clone(), checksum(values)))
        .collect()
}

#[cfg(test)]
mod tests;
