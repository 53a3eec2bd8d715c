//! A replica's input: the whole pipeline, or this worker's shard of it.

use datasets::combinators::Shard;
use datasets::{Dataset, Position};

/// The input one replica trains on.
pub enum ReplicaInput<D> {
    /// Every batch (one replica, or an input already split per worker).
    Whole(D),
    /// Every n-th batch, for worker n of a cluster.
    Sharded(Shard<D>),
}

impl<D: Dataset> Dataset for ReplicaInput<D> {
    type Item = D::Item;

    fn next_item(&mut self) -> Option<Result<D::Item, datasets::Error>> {
        match self {
            ReplicaInput::Whole(d) => d.next_item(),
            ReplicaInput::Sharded(d) => d.next_item(),
        }
    }

    fn len_hint(&self) -> Option<usize> {
        match self {
            ReplicaInput::Whole(d) => d.len_hint(),
            ReplicaInput::Sharded(d) => d.len_hint(),
        }
    }

    fn position(&self) -> Position {
        match self {
            ReplicaInput::Whole(d) => d.position(),
            ReplicaInput::Sharded(d) => d.position(),
        }
    }

    fn restore(&mut self, position: &Position) -> Result<(), datasets::Error> {
        match self {
            ReplicaInput::Whole(d) => d.restore(position),
            ReplicaInput::Sharded(d) => d.restore(position),
        }
    }
}
