//! `interleave`: round-robin over several datasets (e.g. one per file).

use crate::{Dataset, Error, Position};

/// Round-robin over several datasets of the same type, `block_length` items at a time,
/// from [`interleave`]. Exhausted inputs drop out; it ends when all have.
pub struct Interleave<D> {
    inputs: Vec<D>,
    block_length: usize,
    current: usize,
    in_block: usize,
    done: Vec<bool>,
    failed: bool,
}

/// Interleaves `inputs` (e.g. one [`CsvDataset`](crate::CsvDataset) per file),
/// `block_length` items from each in turn, as `tf.data.Dataset.interleave` with
/// `cycle_length = inputs.len()`. `block_length == 0` is an error on the first pull.
pub fn interleave<D: Dataset>(inputs: Vec<D>, block_length: usize) -> Interleave<D> {
    let done = vec![false; inputs.len()];
    Interleave {
        inputs,
        block_length,
        current: 0,
        in_block: 0,
        done,
        failed: false,
    }
}

impl<D> Interleave<D> {
    fn advance(&mut self) {
        self.in_block = 0;
        self.current = (self.current + 1) % self.inputs.len();
    }
}

impl<D: Dataset> Dataset for Interleave<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        if self.block_length == 0 {
            if self.failed {
                return None;
            }
            self.failed = true;
            return Some(Err(Error::InvalidArgument(
                "interleave block_length must be at least 1".into(),
            )));
        }
        while !self.done.iter().all(|&d| d) {
            if self.done[self.current] {
                self.advance();
                continue;
            }
            match self.inputs[self.current].next_item() {
                None => {
                    self.done[self.current] = true;
                    self.advance();
                }
                Some(item) => {
                    self.in_block += 1;
                    if self.in_block >= self.block_length {
                        self.advance();
                    }
                    return Some(item);
                }
            }
        }
        None
    }

    fn len_hint(&self) -> Option<usize> {
        self.inputs.iter().map(Dataset::len_hint).sum()
    }

    fn position(&self) -> Position {
        Position::Interleave {
            current: self.current as u64,
            in_block: self.in_block as u64,
            done: self.done.clone(),
            inputs: self.inputs.iter().map(Dataset::position).collect(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Interleave {
            current,
            in_block,
            done,
            inputs,
        } = position
        else {
            return Err(Error::position_mismatch("interleave", position));
        };
        if inputs.len() != self.inputs.len() || done.len() != self.inputs.len() {
            return Err(Error::Position(format!(
                "interleave position has {} inputs, the pipeline {}",
                inputs.len(),
                self.inputs.len()
            )));
        }
        for (input, pos) in self.inputs.iter_mut().zip(inputs) {
            input.restore(pos)?;
        }
        self.current = (*current as usize).min(self.inputs.len().saturating_sub(1));
        self.in_block = *in_block as usize;
        self.done.clone_from(done);
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::interleave;
    use crate::{from_vec, Dataset, DatasetExt, Error, Position};

    fn collect<D: Dataset>(mut ds: D) -> Vec<D::Item> {
        ds.iter().map(|r| r.unwrap()).collect()
    }

    fn inputs() -> Vec<crate::VecDataset<i32>> {
        vec![
            from_vec(vec![1, 2, 3]),
            from_vec(vec![10]),
            from_vec(vec![20, 21, 22, 23]),
        ]
    }

    #[test]
    fn round_robin_in_blocks() {
        assert_eq!(interleave(inputs(), 1).len_hint(), Some(8));
        assert_eq!(
            collect(interleave(inputs(), 1)),
            vec![1, 10, 20, 2, 21, 3, 22, 23]
        );
        assert_eq!(
            collect(interleave(inputs(), 2)),
            vec![1, 2, 10, 20, 21, 3, 22, 23]
        );
        assert!(collect(interleave(Vec::<crate::VecDataset<i32>>::new(), 1)).is_empty());
    }

    #[test]
    fn zero_block_is_an_error() {
        let mut ds = interleave(inputs(), 0);
        assert!(matches!(
            ds.next_item(),
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(ds.next_item().is_none());
    }

    #[test]
    fn restore_mid_way() {
        let full = collect(interleave(inputs(), 2));
        for k in 0..=full.len() {
            let mut ds = interleave(inputs(), 2);
            for _ in 0..k {
                ds.next_item();
            }
            let pos = ds.position();
            let mut fresh = interleave(inputs(), 2);
            fresh.restore(&pos).unwrap();
            assert_eq!(collect(fresh), full[k..].to_vec());
        }
        let mut ds = interleave(inputs(), 2);
        assert!(ds.restore(&Position::Index(0)).is_err());
        let two = interleave(vec![from_vec(vec![1]), from_vec(vec![2])], 1).position();
        assert!(ds.restore(&two).is_err());
    }
}
