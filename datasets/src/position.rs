//! [`Position`]: where a pipeline stands, as a serialisable tree.

use serde::{Deserialize, Serialize};

use crate::rng::mix;

/// Where a pipeline stands, one node per stateful stage.
///
/// Stateless stages (`map`, `filter`, `batch`, `prefetch`, ordered `map_parallel`)
/// report their upstream's position unchanged, so the tree mirrors only the stages that
/// keep state. Positions serialise to JSON (the core stores them in checkpoints) and
/// are restored into a pipeline built the same way with
/// [`Dataset::restore`](crate::Dataset::restore).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// A random-access source (in-memory, generator, IDX): items consumed so far.
    Index(u64),
    /// A CSV file: records read so far (bad rows included) and where the next one starts.
    Csv {
        /// Data records read so far, skipped bad rows included.
        record: u64,
        /// Byte offset of the next record.
        byte: u64,
        /// 1-based line of the next record.
        line: u64,
        /// Bad rows skipped so far under [`BadRowPolicy::Skip`](crate::BadRowPolicy).
        skipped: u64,
    },
    /// TFRecord files read in order: the current file, its records read so far, and where
    /// the next one starts.
    #[serde(rename = "tfrecord")]
    TfRecord {
        /// Index of the current file in the list the dataset was opened with.
        file: u64,
        /// Records of that file read so far.
        record: u64,
        /// Byte offset of its next record (in the decompressed stream of a compressed file).
        byte: u64,
    },
    /// A Parquet file: the row group read now and its rows read so far.
    Parquet {
        /// Index of the row group (the number of row groups once all are read).
        row_group: u64,
        /// Rows of that row group read so far.
        row: u64,
    },
    /// `shuffle`: restored by replaying `drawn` steps from `start` with the same seed.
    Shuffle {
        /// Per-epoch salt mixed into the seed (changed by `repeat` each epoch).
        salt: u64,
        /// Upstream position when this pass of the shuffle began.
        start: Box<Position>,
        /// Steps taken since `start` (items and errors returned).
        drawn: u64,
    },
    /// `shard`: upstream items seen so far.
    Shard {
        /// Upstream items (and errors) consumed.
        seen: u64,
        /// Upstream position.
        inner: Box<Position>,
    },
    /// `repeat`: the epoch and the upstream position it restarts from.
    Repeat {
        /// Completed passes over the upstream.
        epoch: u64,
        /// Items yielded in the current pass.
        in_epoch: u64,
        /// Upstream position at the start of the first pass.
        start: Box<Position>,
        /// Upstream position now.
        inner: Box<Position>,
    },
    /// `take`: items taken so far.
    Take {
        /// Items yielded so far.
        taken: u64,
        /// Upstream position.
        inner: Box<Position>,
    },
    /// `skip`: items skipped so far.
    Skip {
        /// Items skipped so far (at most the skip count).
        skipped: u64,
        /// Upstream position.
        inner: Box<Position>,
    },
    /// `cache`: index of the next item of the cached pass.
    Cache {
        /// Items yielded in this pass.
        index: u64,
    },
    /// `zip`: both sides.
    Zip {
        /// Left-hand dataset.
        left: Box<Position>,
        /// Right-hand dataset.
        right: Box<Position>,
    },
    /// `flat_map`: the upstream before the item being expanded, and how many of its
    /// expansion were yielded.
    FlatMap {
        /// Upstream position before the item being expanded.
        before: Box<Position>,
        /// Items of its expansion yielded so far.
        taken: u64,
    },
    /// `concatenate`: both datasets, and whether the first has ended.
    Concatenate {
        /// Whether the items now come from the second dataset.
        on_second: bool,
        /// The first dataset.
        first: Box<Position>,
        /// The second dataset.
        second: Box<Position>,
    },
    /// `sample_from_datasets`: the picks so far, which inputs have ended, and each input.
    SampleFrom {
        /// Per-epoch salt mixed into the seed (changed by `repeat` each epoch).
        salt: u64,
        /// Picks drawn so far.
        drawn: u64,
        /// Whether each input has ended.
        ended: Vec<bool>,
        /// Each input's position.
        inputs: Vec<Position>,
    },
    /// `interleave`: which slot of the cycle is current, which input each slot reads and
    /// where it stands (for files: which file, and where in it).
    Interleave {
        /// Index of the slot read next.
        current: u64,
        /// Items already taken from the current slot in this block.
        in_block: u64,
        /// Whether each slot is empty (its input read to the end, or none opened yet).
        done: Vec<bool>,
        /// Each slot's input's position (`index 0` for an empty slot).
        inputs: Vec<Position>,
        /// Which input (file) each slot reads; absent in positions written when every
        /// input had a slot of its own: slot `i` reads input `i`.
        #[serde(default)]
        slot_inputs: Vec<u64>,
        /// Inputs opened so far; absent in positions written when every input was open
        /// from the start.
        #[serde(default)]
        opened: Option<u64>,
        /// The name of each slot's input (a file's path; `""` for an empty slot), when the
        /// inputs have names: a position of other files is refused.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        names: Vec<String>,
    },
    /// `map_parallel(..).deterministic(false)`: items may have been yielded out of order.
    UnorderedMap {
        /// Upstream position before the oldest item not yet yielded.
        inner: Box<Position>,
        /// Offsets past `inner` of the items already yielded, ascending; restoring skips
        /// them so that every item is yielded exactly once.
        yielded: Vec<u64>,
    },
}

impl Position {
    /// Short name of this node's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Position::Index(_) => "index",
            Position::Csv { .. } => "csv",
            Position::TfRecord { .. } => "tfrecord",
            Position::Parquet { .. } => "parquet",
            Position::Shuffle { .. } => "shuffle",
            Position::Shard { .. } => "shard",
            Position::Repeat { .. } => "repeat",
            Position::Take { .. } => "take",
            Position::Skip { .. } => "skip",
            Position::Cache { .. } => "cache",
            Position::Zip { .. } => "zip",
            Position::FlatMap { .. } => "flat_map",
            Position::Concatenate { .. } => "concatenate",
            Position::SampleFrom { .. } => "sample_from",
            Position::Interleave { .. } => "interleave",
            Position::UnorderedMap { .. } => "unordered_map",
        }
    }

    /// The same position with every shuffle below it salted with `epoch`, so that
    /// restoring it replays the same items in a new order.
    ///
    /// `repeat` uses this to reshuffle each epoch; use it yourself to run another epoch
    /// of a pipeline by restoring its start position: `ds.restore(&start.reseeded(e))`.
    pub fn reseeded(&self, epoch: u64) -> Position {
        let re = |p: &Position| Box::new(p.reseeded(epoch));
        match self {
            Position::Index(_)
            | Position::Csv { .. }
            | Position::TfRecord { .. }
            | Position::Parquet { .. }
            | Position::Cache { .. } => self.clone(),
            Position::Shuffle { salt, start, drawn } => Position::Shuffle {
                salt: mix(*salt ^ mix(epoch.wrapping_add(0x5EED))),
                start: re(start),
                drawn: *drawn,
            },
            Position::Shard { seen, inner } => Position::Shard {
                seen: *seen,
                inner: re(inner),
            },
            Position::Repeat {
                epoch: e,
                in_epoch,
                start,
                inner,
            } => Position::Repeat {
                epoch: *e,
                in_epoch: *in_epoch,
                start: re(start),
                inner: re(inner),
            },
            Position::Take { taken, inner } => Position::Take {
                taken: *taken,
                inner: re(inner),
            },
            Position::Skip { skipped, inner } => Position::Skip {
                skipped: *skipped,
                inner: re(inner),
            },
            Position::Zip { left, right } => Position::Zip {
                left: re(left),
                right: re(right),
            },
            Position::FlatMap { before, taken } => Position::FlatMap {
                before: re(before),
                taken: *taken,
            },
            Position::Concatenate {
                on_second,
                first,
                second,
            } => Position::Concatenate {
                on_second: *on_second,
                first: re(first),
                second: re(second),
            },
            Position::SampleFrom {
                salt,
                drawn,
                ended,
                inputs,
            } => Position::SampleFrom {
                salt: mix(*salt ^ mix(epoch.wrapping_add(0x5A3F))),
                drawn: *drawn,
                ended: ended.clone(),
                inputs: inputs.iter().map(|p| p.reseeded(epoch)).collect(),
            },
            Position::Interleave {
                current,
                in_block,
                done,
                inputs,
                slot_inputs,
                opened,
                names,
            } => Position::Interleave {
                current: *current,
                in_block: *in_block,
                done: done.clone(),
                inputs: inputs.iter().map(|p| p.reseeded(epoch)).collect(),
                slot_inputs: slot_inputs.clone(),
                opened: *opened,
                names: names.clone(),
            },
            Position::UnorderedMap { inner, yielded } => Position::UnorderedMap {
                inner: re(inner),
                yielded: yielded.clone(),
            },
        }
    }

    /// This position as a JSON value (what the core writes into checkpoints).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Reads a position written by [`Position::to_json`].
    pub fn from_json(value: &serde_json::Value) -> Result<Position, crate::Error> {
        Position::deserialize(value).map_err(|e| crate::Error::Position(e.to_string()))
    }
}

// Here rather than in error.rs, so that the error type needs nothing of the positions.
impl crate::Error {
    /// An [`Error::Position`](crate::Error::Position) saying which kind of position was
    /// expected and what came.
    pub(crate) fn position_mismatch(expected: &str, found: &Position) -> Self {
        crate::Error::Position(format!(
            "expected a {expected} position, found {}",
            found.kind()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let p = Position::Repeat {
            epoch: 2,
            in_epoch: 5,
            start: Box::new(Position::Shuffle {
                salt: 0,
                start: Box::new(Position::Csv {
                    record: 0,
                    byte: 10,
                    line: 2,
                    skipped: 0,
                }),
                drawn: 0,
            }),
            inner: Box::new(Position::Index(u64::MAX)),
        };
        let text = serde_json::to_string(&p).unwrap();
        let back: Position = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
        assert_eq!(Position::from_json(&p.to_json()).unwrap(), p);
    }

    #[test]
    fn reseeded_changes_only_shuffle_salts() {
        let p = Position::Take {
            taken: 3,
            inner: Box::new(Position::Shuffle {
                salt: 0,
                start: Box::new(Position::Index(0)),
                drawn: 4,
            }),
        };
        let a = p.reseeded(1);
        let b = p.reseeded(2);
        assert_ne!(a, p);
        assert_ne!(a, b);
        assert_eq!(a, p.reseeded(1));
        let Position::Take { taken, inner } = a else {
            panic!()
        };
        assert_eq!(taken, 3);
        assert!(matches!(*inner, Position::Shuffle { drawn: 4, .. }));
        assert_eq!(Position::Index(3).reseeded(9), Position::Index(3));
    }

    #[test]
    fn bad_json_is_an_error() {
        let err = Position::from_json(&serde_json::json!({"nope": 1})).unwrap_err();
        assert!(err.to_string().starts_with("cannot restore position"));
    }
}
