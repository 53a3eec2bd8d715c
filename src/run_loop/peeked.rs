//! A dataset whose next item can be looked at before the loop takes it.

use datasets::{Dataset, Error, Position};

/// `D` with its next item read ahead on demand: the item and the position before it are
/// kept, so the loop still gets every item once, in order, and a checkpoint taken before
/// the item is delivered records the position before it.
pub(super) struct Peeked<D: Dataset> {
    rest: D,
    ahead: Option<Ahead<D::Item>>,
}

/// The item read ahead (`None`: the data had ended) and the position before it.
struct Ahead<T> {
    item: Option<Result<T, Error>>,
    before: Position,
}

impl<D: Dataset> Peeked<D> {
    pub fn new(rest: D) -> Self {
        Self { rest, ahead: None }
    }

    /// The next item, without taking it: `None` once the data is exhausted.
    pub fn peek(&mut self) -> Option<&Result<D::Item, Error>> {
        if self.ahead.is_none() {
            let before = self.rest.position();
            let item = self.rest.next_item();
            self.ahead = Some(Ahead { item, before });
        }
        self.ahead.as_ref().and_then(|ahead| ahead.item.as_ref())
    }
}

impl<D: Dataset> Dataset for Peeked<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, Error>> {
        match self.ahead.take() {
            Some(ahead) => ahead.item,
            None => self.rest.next_item(),
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.rest.len_hint()
    }

    fn position(&self) -> Position {
        match &self.ahead {
            Some(ahead) => ahead.before.clone(),
            None => self.rest.position(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        self.ahead = None;
        self.rest.restore(position)
    }
}

#[cfg(test)]
mod tests {
    use datasets::{from_vec, Dataset, DatasetExt};

    use super::Peeked;

    fn rest<D: Dataset<Item = u32>>(dataset: &mut D) -> Vec<u32> {
        dataset.iter().map(|item| item.unwrap()).collect()
    }

    #[test]
    fn a_peeked_item_is_delivered_once_and_the_position_stays_before_it() {
        let mut dataset = Peeked::new(from_vec(vec![1u32, 2, 3]).shuffle(3, 7));
        let start = dataset.position();
        let first = *dataset.peek().unwrap().as_ref().unwrap();
        assert_eq!(dataset.peek().unwrap().as_ref().unwrap(), &first);
        assert_eq!(dataset.position(), start);
        let all = rest(&mut dataset);
        assert_eq!((all.len(), all[0]), (3, first));

        let mut resumed = Peeked::new(from_vec(vec![1u32, 2, 3]).shuffle(3, 7));
        resumed.restore(&start).unwrap();
        assert_eq!(rest(&mut resumed), all);
    }

    #[test]
    fn restoring_drops_the_item_read_ahead() {
        let mut dataset = Peeked::new(from_vec(vec![1u32, 2, 3]));
        assert_eq!(dataset.next_item().unwrap().unwrap(), 1);
        let after_one = dataset.position();
        assert_eq!(dataset.peek().unwrap().as_ref().unwrap(), &2);
        dataset.restore(&after_one).unwrap();
        assert_eq!(rest(&mut dataset), vec![2, 3]);
        assert!(dataset.peek().is_none());
        assert!(dataset.next_item().is_none());
    }
}
