//! Values the forward pass changes without a gradient (batch normalisation's running mean
//! and variance), kept identical on synchronous replicas as the mean of theirs at every
//! step: what TF's distribution strategies do with Keras' moving statistics (variables
//! synchronised on read, aggregated by their mean).
//!
//! Each replica sends how far its values moved since the last synchronised step, riding in
//! the gradients' all-reduce, and adds the mean move to the values all replicas held. A
//! value no replica moved therefore stays bit for bit, however many replicas there are.
//!
//! What the first step moved on no replica (a frozen layer) is dormant: only its checksum
//! is kept, and every [`RECHECK_EVERY`] steps each replica sends, per dormant value, whether
//! its checksum changed. A value some replica moved rides the next step whole, and every
//! replica takes the mean: the mean of moving averages started alike, since each update is
//! linear in the value. From then on it is held like the others.

use std::collections::BTreeMap;

use burn::module::Module;
use burn::tensor::backend::Backend;

use crate::error::Result;
use crate::state::{load_values, untrained_values_where, values_crc32c as checksum};

/// Steps between two looks at the dormant values.
pub const RECHECK_EVERY: u64 = 100;

/// The untrained values every replica holds, and which of them the steps move.
pub(crate) struct RunningStatistics {
    /// The values every replica held after the last synchronised step, by path.
    held: BTreeMap<String, Vec<f32>>,
    /// Values no step was seen to move: their length and checksum, alike on every replica.
    dormant: BTreeMap<String, (usize, u32)>,
    /// Dormant values some replica moved: this step sends them whole, by length.
    woken: BTreeMap<String, usize>,
    /// Steps settled.
    steps: u64,
}

impl RunningStatistics {
    /// Every untrained value of `model`, which all replicas hold alike at the start.
    pub fn new<B: Backend, M: Module<B>>(model: &M) -> Self {
        Self {
            held: untrained_values_where(model, |_| true),
            dormant: BTreeMap::new(),
            woken: BTreeMap::new(),
            steps: 0,
        }
    }

    /// Whether this step looks at the dormant values.
    fn rechecks(&self) -> bool {
        self.steps > 0 && self.steps.is_multiple_of(RECHECK_EVERY) && !self.dormant.is_empty()
    }

    /// What this replica sends along this step's gradients, as long on every replica: how
    /// far `model`'s held values moved since the last synchronised step, one after another
    /// in path order; then the woken values whole; then, on a step that looks, a flag per
    /// dormant value (1 where its checksum changed).
    pub fn moves<B: Backend, M: Module<B>>(&self, model: &M) -> Vec<f32> {
        let rechecks = self.rechecks();
        if self.held.is_empty() && self.woken.is_empty() && !rechecks {
            return Vec::new();
        }
        let now = untrained_values_where(model, |path| {
            self.held.contains_key(path)
                || self.woken.contains_key(path)
                || (rechecks && self.dormant.contains_key(path))
        });
        let found = |path: &str, len: usize| now.get(path).filter(|now| now.len() == len);
        let mut moves = Vec::with_capacity(self.held.values().map(Vec::len).sum());
        for (path, before) in &self.held {
            match found(path, before.len()) {
                Some(now) => moves.extend(now.iter().zip(before).map(|(n, b)| n - b)),
                None => moves.extend(std::iter::repeat_n(0.0, before.len())),
            }
        }
        for (path, &len) in &self.woken {
            match found(path, len) {
                Some(now) => moves.extend(now),
                None => moves.extend(std::iter::repeat_n(0.0, len)),
            }
        }
        if rechecks {
            moves.extend(self.dormant.iter().map(|(path, &(len, crc))| {
                let moved = found(path, len).is_some_and(|now| checksum(now) != crc);
                if moved {
                    1.0
                } else {
                    0.0
                }
            }));
        }
        moves
    }

    /// `model` with every held value moved by its mean move over the replicas and every
    /// woken value set to the replicas' mean (`mean`, in [`moves`](Self::moves)' order).
    /// After the first step only what some replica moved is held.
    pub fn settle<B: Backend, M: Module<B>>(&mut self, model: M, mean: &[f32]) -> Result<M> {
        let rechecks = self.rechecks();
        let mut rest = mean;
        let mut next = |len: usize| {
            let (taken, left) = rest.split_at(len.min(rest.len()));
            rest = left;
            taken
        };
        let mut settled = BTreeMap::new();
        let discovering = self.steps == 0;
        let mut dormant = Vec::new();
        self.held.retain(|path, values| {
            let mean = next(values.len());
            if discovering && mean.iter().all(|m| *m == 0.0) {
                dormant.push((path.clone(), (values.len(), checksum(values))));
                return false;
            }
            values.iter_mut().zip(mean).for_each(|(v, m)| *v += m);
            settled.insert(path.clone(), values.clone());
            true
        });
        self.dormant.extend(dormant);
        for (path, len) in std::mem::take(&mut self.woken) {
            let values = next(len).to_vec();
            settled.insert(path.clone(), values.clone());
            self.held.insert(path, values);
        }
        if rechecks {
            let flags = next(self.dormant.len()).to_vec();
            let dormant = std::mem::take(&mut self.dormant);
            for ((path, (len, crc)), flag) in dormant.into_iter().zip(flags) {
                match flag > 0.0 {
                    true => drop(self.woken.insert(path, len)),
                    false => drop(self.dormant.insert(path, (len, crc))),
                }
            }
        }
        self.steps += 1;
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
