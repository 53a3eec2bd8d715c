//! Values the forward pass changes without a gradient (batch normalisation's running mean
//! and variance), kept identical on synchronous replicas as the mean of theirs at every
//! step: what TF's distribution strategies do with Keras' moving statistics (variables
//! synchronised on read, aggregated by their mean).
//!
//! Each replica sends how far its values moved since the last synchronised step, riding in
//! the gradients' all-reduce, and adds the mean move to the values all replicas held. A
//! value no replica moved therefore stays bit for bit, however many replicas there are; and
//! what the first step moved on no replica (a frozen layer) is not read again.

use std::collections::BTreeMap;

use burn::module::Module;
use burn::tensor::backend::Backend;

use crate::error::Result;
use crate::state::{load_values, untrained_values_where};

/// The untrained values every replica holds, and which of them the steps move.
pub(crate) struct RunningStatistics {
    /// The values every replica held after the last synchronised step, by path.
    held: BTreeMap<String, Vec<f32>>,
    /// Whether `held` still has every untrained value, until a step shows which move.
    discovering: bool,
}

impl RunningStatistics {
    /// Every untrained value of `model`, which all replicas hold alike at the start.
    pub fn new<B: Backend, M: Module<B>>(model: &M) -> Self {
        Self {
            held: untrained_values_where(model, |_| true),
            discovering: true,
        }
    }

    /// How far `model`'s held values moved since the last synchronised step, one after
    /// another in path order: as many values on every replica.
    pub fn moves<B: Backend, M: Module<B>>(&self, model: &M) -> Vec<f32> {
        if self.held.is_empty() {
            return Vec::new();
        }
        let now = untrained_values_where(model, |path| self.held.contains_key(path));
        let mut moves = Vec::with_capacity(self.held.values().map(Vec::len).sum());
        for (path, before) in &self.held {
            match now.get(path).filter(|now| now.len() == before.len()) {
                Some(now) => moves.extend(now.iter().zip(before).map(|(n, b)| n - b)),
                None => moves.extend(std::iter::repeat_n(0.0, before.len())),
            }
        }
        moves
    }

    /// `model` with every held value moved by its mean move over the replicas
    /// (`mean_moves`, in [`moves`](Self::moves)' order). After the first step only what
    /// some replica moved is held.
    pub fn settle<B: Backend, M: Module<B>>(&mut self, model: M, mean_moves: &[f32]) -> Result<M> {
        let mut at = 0;
        let mut settled = BTreeMap::new();
        let discovering = std::mem::replace(&mut self.discovering, false);
        self.held.retain(|path, values| {
            let mean = &mean_moves[at.min(mean_moves.len())..];
            let mean = &mean[..values.len().min(mean.len())];
            at += values.len();
            if discovering && mean.iter().all(|m| *m == 0.0) {
                return false;
            }
            values.iter_mut().zip(mean).for_each(|(v, m)| *v += m);
            settled.insert(path.clone(), values.clone());
            true
        });
        match settled.is_empty() {
            true => Ok(model),
            false => load_values(model, &mut settled),
        }
    }

    /// How many values are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.held.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests;
