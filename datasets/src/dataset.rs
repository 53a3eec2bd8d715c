//! The `Dataset` trait: a resumable, pull-based source of examples.

use crate::{Error, Position};

/// A source of items (examples or batches), pulled one at a time.
///
/// Every dataset is deterministic given its construction arguments (seeds included), can
/// report where it stands as a [`Position`], and can be put back at that position after
/// being rebuilt the same way — this is what lets a training run restored from a
/// checkpoint continue with the next batch instead of the start of the epoch.
pub trait Dataset: Send {
    /// What one pull yields.
    type Item: Send;

    /// The next item, `None` once the data is exhausted, or an error for bad input.
    fn next_item(&mut self) -> Option<Result<Self::Item, Error>>;

    /// Number of items one full pass yields, when known without reading the data.
    fn len_hint(&self) -> Option<usize>;

    /// Where the pipeline stands now: restoring it yields exactly the items that would
    /// have followed.
    fn position(&self) -> Position;

    /// Continue from `position`, taken from a pipeline built with the same arguments.
    fn restore(&mut self, position: &Position) -> Result<(), Error>;
}
