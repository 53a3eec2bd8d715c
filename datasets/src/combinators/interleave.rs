//! `interleave`: tf.data's interleave over several inputs (e.g. one per file): `cycle_length`
//! of them read at a time, `block_length` items from each in turn, an input that ends
//! replaced by the next one not yet opened.

use crate::{Dataset, Error, Position};

/// The inputs an [`Interleave`] reads, opened one at a time and in order as the cycle
/// reaches them: datasets built up front ([`interleave`]) or files opened on demand
/// ([`InputFiles::read`](crate::InputFiles::read)).
pub trait Inputs: Send {
    /// What each input is.
    type Input: Dataset;

    /// Number of inputs.
    fn count(&self) -> usize;

    /// Input `index` at its start.
    fn open(&mut self, index: usize) -> Result<Self::Input, Error>;

    /// Takes back input `index` once the interleave is done with it (read to its end, or
    /// put aside by a restore); by default it is dropped.
    fn close(&mut self, index: usize, input: Self::Input) {
        let _ = (index, input);
    }

    /// Items of all inputs together, when known without reading them.
    fn len_hint(&self) -> Option<usize> {
        None
    }

    /// A name for input `index` (a file's path) that positions record, so that a position
    /// is not restored into another list of inputs that happens to have as many.
    fn name(&self, index: usize) -> Option<String> {
        let _ = index;
        None
    }
}

/// Datasets built up front, handed out by [`Inputs::open`] and taken back by
/// [`Inputs::close`], so that a restore can open one again.
pub struct Built<D: Dataset> {
    held: Vec<Option<D>>,
    /// Each input's position when it was given: where opening it again starts it.
    starts: Vec<Position>,
    /// Whether each input has been opened before (and may have been read since).
    used: Vec<bool>,
    len_hint: Option<usize>,
}

impl<D: Dataset> Inputs for Built<D> {
    type Input = D;

    fn count(&self) -> usize {
        self.held.len()
    }

    fn open(&mut self, index: usize) -> Result<D, Error> {
        let mut input = self.held[index].take().ok_or_else(|| {
            Error::InvalidArgument(format!("interleave input {index} is open already"))
        })?;
        if std::mem::replace(&mut self.used[index], true) {
            input.restore(&self.starts[index])?;
        }
        Ok(input)
    }

    fn close(&mut self, index: usize, input: D) {
        self.held[index] = Some(input);
    }

    fn len_hint(&self) -> Option<usize> {
        self.len_hint
    }
}

/// One input being read: which one, and the dataset.
struct Slot<D> {
    input: usize,
    data: D,
}

/// Items of several inputs, `block_length` at a time from each of the `cycle_length` open
/// ones in turn, from [`interleave`] or [`InputFiles::read`](crate::InputFiles::read), as
/// `tf.data.Dataset.interleave` (deterministic): a slot whose input ends takes the next
/// input not yet opened, and the whole ends when every input has been read.
pub struct Interleave<I: Inputs> {
    inputs: I,
    block_length: usize,
    /// `cycle_length` slots, `None` while empty.
    slots: Vec<Option<Slot<I::Input>>>,
    /// Inputs opened so far: the next one to open.
    opened: usize,
    /// The slot read next.
    current: usize,
    in_block: usize,
    /// `cycle_length` as asked, for the error when it is 0.
    cycle_length: usize,
    failed: bool,
}

/// Interleaves `inputs` (e.g. one [`CsvDataset`](crate::CsvDataset) per file),
/// `block_length` items from each in turn, as `tf.data.Dataset.interleave` with
/// `cycle_length = inputs.len()`. `block_length == 0` is an error on the first pull.
pub fn interleave<D: Dataset>(inputs: Vec<D>, block_length: usize) -> Interleave<Built<D>> {
    let cycle_length = inputs.len().max(1);
    let len_hint = inputs.iter().map(Dataset::len_hint).sum();
    let starts = inputs.iter().map(Dataset::position).collect();
    let used = vec![false; inputs.len()];
    let built = Built {
        held: inputs.into_iter().map(Some).collect(),
        starts,
        used,
        len_hint,
    };
    Interleave::new(built, cycle_length, block_length)
}

impl<I: Inputs> Interleave<I> {
    /// `inputs` read `cycle_length` at a time, `block_length` items from each in turn; 0
    /// for either is an error on the first pull.
    pub fn new(inputs: I, cycle_length: usize, block_length: usize) -> Self {
        let slots = (0..cycle_length.min(inputs.count()))
            .map(|_| None)
            .collect();
        Interleave {
            inputs,
            block_length,
            slots,
            opened: 0,
            current: 0,
            in_block: 0,
            cycle_length,
            failed: false,
        }
    }

    /// The inputs.
    pub fn inputs(&self) -> &I {
        &self.inputs
    }

    fn advance(&mut self) {
        self.in_block = 0;
        self.current = (self.current + 1) % self.slots.len();
    }

    /// Hands the input of slot `index` back, leaving the slot empty.
    fn close_slot(&mut self, index: usize) {
        if let Some(slot) = self.slots[index].take() {
            self.inputs.close(slot.input, slot.data);
        }
    }

    /// The name of each slot's input (`""` for an empty slot); none when inputs have no
    /// names.
    fn slot_names(&self) -> Vec<String> {
        let names: Vec<Option<String>> = (self.slots.iter())
            .map(|s| s.as_ref().and_then(|s| self.inputs.name(s.input)))
            .collect();
        if names.iter().all(Option::is_none) {
            return Vec::new();
        }
        names.into_iter().map(Option::unwrap_or_default).collect()
    }

    /// Back to the start: no input open.
    fn rewind(&mut self) {
        for i in 0..self.slots.len() {
            self.close_slot(i);
        }
        self.opened = 0;
        self.current = 0;
        self.in_block = 0;
        self.failed = false;
    }

    fn fail(&mut self, error: Error) -> Option<Result<<I::Input as Dataset>::Item, Error>> {
        self.failed = true;
        Some(Err(error))
    }
}

impl<I: Inputs> Dataset for Interleave<I> {
    type Item = <I::Input as Dataset>::Item;

    fn next_item(&mut self) -> Option<Result<Self::Item, Error>> {
        if self.failed {
            return None;
        }
        if self.block_length == 0 || self.cycle_length == 0 {
            return self.fail(Error::InvalidArgument(format!(
                "interleave needs a cycle_length and a block_length of at least 1 (got {} \
                 and {})",
                self.cycle_length, self.block_length
            )));
        }
        let count = self.inputs.count();
        loop {
            if self.opened >= count && self.slots.iter().all(Option::is_none) {
                return None;
            }
            let current = self.current;
            match &mut self.slots[current] {
                Some(slot) => match slot.data.next_item() {
                    Some(item) => {
                        self.in_block += 1;
                        if self.in_block >= self.block_length {
                            self.advance();
                        }
                        return Some(item);
                    }
                    None => {
                        self.close_slot(current);
                        self.advance();
                    }
                },
                // As tf.data: the empty slot takes the next input and is read at once.
                None if self.opened < count => match self.inputs.open(self.opened) {
                    Ok(data) => {
                        self.slots[current] = Some(Slot {
                            input: self.opened,
                            data,
                        });
                        self.opened += 1;
                    }
                    Err(e) => return self.fail(e),
                },
                None => self.advance(),
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.inputs.len_hint()
    }

    fn position(&self) -> Position {
        let slots = &self.slots;
        Position::Interleave {
            current: self.current as u64,
            in_block: self.in_block as u64,
            done: slots.iter().map(Option::is_none).collect(),
            inputs: slots
                .iter()
                .map(|s| s.as_ref().map_or(Position::Index(0), |s| s.data.position()))
                .collect(),
            slot_inputs: slots
                .iter()
                .enumerate()
                .map(|(i, s)| s.as_ref().map_or(i, |s| s.input) as u64)
                .collect(),
            opened: Some(self.opened as u64),
            names: self.slot_names(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        let Position::Interleave {
            current,
            in_block,
            done,
            inputs,
            slot_inputs,
            opened,
            names,
        } = position
        else {
            return Err(Error::position_mismatch("interleave", position));
        };
        let (slots, count) = (self.slots.len(), self.inputs.count());
        if inputs.len() != slots || done.len() != slots {
            return Err(Error::Position(format!(
                "interleave position has {} inputs, the pipeline {slots}",
                inputs.len(),
            )));
        }
        // A position written before slots were recorded: every input had its own slot and
        // all were open from the start.
        let slot_input = |i: usize| slot_inputs.get(i).map_or(i as u64, |&k| k);
        let opened = opened.unwrap_or(count as u64);
        // An input in two slots would be read twice (files open as often as asked).
        let bad = (0..slots).find(|&i| {
            !done[i]
                && (slot_input(i) >= opened.min(count as u64)
                    || (0..i).any(|j| !done[j] && slot_input(j) == slot_input(i)))
        });
        if opened > count as u64 || bad.is_some() || (*current as usize) >= slots.max(1) {
            return Err(Error::Position(format!(
                "interleave position does not fit {count} inputs in {slots} slots"
            )));
        }
        for (i, name) in names.iter().enumerate().filter(|(i, _)| !done[*i]) {
            let ours = self.inputs.name(slot_input(i) as usize);
            if let Some(ours) = ours.filter(|ours| ours != name) {
                return Err(Error::Position(format!(
                    "interleave slot {i} read {name}, but input {} of this pipeline is {ours}",
                    slot_input(i)
                )));
            }
        }
        self.rewind();
        for (i, pos) in inputs.iter().enumerate() {
            if done[i] {
                continue;
            }
            let input = slot_input(i) as usize;
            let restored = self
                .inputs
                .open(input)
                .and_then(|mut data| match data.restore(pos) {
                    Ok(()) => Ok(data),
                    Err(e) => {
                        self.inputs.close(input, data);
                        Err(e)
                    }
                });
            match restored {
                Ok(data) => self.slots[i] = Some(Slot { input, data }),
                Err(e) => {
                    // Half restored is no place to read from: back to the start.
                    self.rewind();
                    return Err(e);
                }
            }
        }
        self.opened = opened as usize;
        self.current = *current as usize;
        self.in_block = *in_block as usize;
        self.failed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
