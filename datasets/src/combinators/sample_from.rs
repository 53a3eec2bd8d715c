//! `sample_from_datasets`: items drawn at random from several datasets, by weight.

use crate::rng::{mix, SplitMix64};
use crate::{Dataset, Error, Position};

/// Each item from one of several datasets, picked at random with the probabilities their
/// weights give, from [`sample_from_datasets`] (tf.data's `sample_from_datasets`).
///
/// Each pick is drawn from the seed and the number of picks so far alone, so the position
/// (picks, which inputs have ended, each input's position) restores it exactly; `repeat`
/// reseeds it each epoch, as it does `shuffle`. When an input ends, the picks go on among
/// the others, weighted as before, unless [`SampleFrom::stop_on_empty_dataset`] says to
/// end there. An input of weight 0 is never read. An error of an input is yielded as its
/// item.
pub struct SampleFrom<D> {
    inputs: Vec<D>,
    weights: Vec<f64>,
    seed: u64,
    salt: u64,
    drawn: u64,
    ended: Vec<bool>,
    stop_on_empty: bool,
    /// Why the arguments cannot work, yielded once at the first pull.
    invalid: Option<String>,
}

/// Items of `inputs` picked at random, input `i` with probability `weights[i] / Σ weights`
/// among the inputs that have not ended (tf.data's `sample_from_datasets`). The weights
/// must be as many as the inputs, finite, not negative, and not all 0: otherwise the first
/// pull is an [`Error::InvalidArgument`] saying so.
pub fn sample_from_datasets<D: Dataset>(
    inputs: Vec<D>,
    weights: Vec<f64>,
    seed: u64,
) -> SampleFrom<D> {
    let invalid = if weights.len() != inputs.len() {
        Some(format!(
            "sample_from_datasets: {} weights for {} datasets",
            weights.len(),
            inputs.len()
        ))
    } else if let Some((i, w)) =
        (weights.iter().enumerate()).find(|(_, w)| !(w.is_finite() && **w >= 0.0))
    {
        Some(format!(
            "sample_from_datasets: weight {i} is {w}: a weight is a finite number, 0 or more"
        ))
    } else if !weights.iter().any(|w| *w > 0.0) {
        Some("sample_from_datasets: every weight is 0".to_string())
    } else {
        None
    };
    SampleFrom {
        ended: vec![false; inputs.len()],
        inputs,
        weights,
        seed,
        salt: 0,
        drawn: 0,
        stop_on_empty: false,
        invalid,
    }
}

impl<D> SampleFrom<D> {
    /// Ends at the first input that ends (`true`), instead of going on with the others
    /// (`false`, the default), as tf.data's `stop_on_empty_dataset`.
    pub fn stop_on_empty_dataset(mut self, stop: bool) -> Self {
        self.stop_on_empty = stop;
        self
    }

    /// The input of the next pick among those not ended, `None` when none is left to pick.
    fn pick(&mut self) -> Option<usize> {
        let live = |i: usize| !self.ended[i] && self.weights[i] > 0.0;
        let total: f64 = (0..self.inputs.len())
            .filter(|&i| live(i))
            .map(|i| self.weights[i])
            .sum();
        if total <= 0.0 {
            return None;
        }
        let mut rng = SplitMix64::derive(self.seed ^ mix(self.salt), self.drawn);
        self.drawn += 1;
        let mut left = rng.next_f64() * total;
        let mut last = None;
        for i in (0..self.inputs.len()).filter(|&i| live(i)) {
            if left < self.weights[i] {
                return Some(i);
            }
            left -= self.weights[i];
            last = Some(i);
        }
        // Rounding left a sliver past the last weight.
        last
    }
}

impl<D: Dataset> Dataset for SampleFrom<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        if let Some(message) = self.invalid.take() {
            self.ended.iter_mut().for_each(|e| *e = true);
            return Some(Err(Error::InvalidArgument(message)));
        }
        loop {
            let i = self.pick()?;
            match self.inputs[i].next_item() {
                Some(item) => return Some(item),
                None if self.stop_on_empty => {
                    self.ended.iter_mut().for_each(|e| *e = true);
                    return None;
                }
                None => self.ended[i] = true,
            }
        }
    }

    /// Every item of the inputs that can be picked, when each says how many it has; unknown
    /// when the first input to end ends it.
    fn len_hint(&self) -> Option<usize> {
        if self.stop_on_empty {
            return None;
        }
        (self.inputs.iter().zip(&self.weights))
            .filter(|(_, w)| **w > 0.0)
            .try_fold(0usize, |sum, (input, _)| sum.checked_add(input.len_hint()?))
    }

    fn position(&self) -> Position {
        Position::SampleFrom {
            salt: self.salt,
            drawn: self.drawn,
            ended: self.ended.clone(),
            inputs: self.inputs.iter().map(Dataset::position).collect(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::SampleFrom {
            salt,
            drawn,
            ended,
            inputs,
        } = position
        else {
            return Err(Error::position_mismatch("sample_from", position));
        };
        if inputs.len() != self.inputs.len() || ended.len() != self.inputs.len() {
            return Err(Error::Position(format!(
                "a sample_from position of {} datasets, restored into one of {}",
                inputs.len(),
                self.inputs.len()
            )));
        }
        for (input, position) in self.inputs.iter_mut().zip(inputs) {
            input.restore(position)?;
        }
        (self.salt, self.drawn) = (*salt, *drawn);
        self.ended.clone_from(ended);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
