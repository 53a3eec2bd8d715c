//! The tags collectives put on their messages.

use std::fmt;

/// Which part of which collective a message belongs to: the top byte of its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollectivePhase {
    /// All-reduce, first half: partial sums travel round the ring.
    ReduceScatter = 1,
    /// All-reduce, second half: the reduced chunks travel round the ring.
    AllGather = 2,
    /// Broadcast: the payload's length.
    BroadcastLength = 3,
    /// Broadcast: a segment of the payload.
    BroadcastData = 4,
    /// Barrier: one round's token.
    Barrier = 5,
    /// Gather: a rank's small value, to every other rank.
    Gather = 6,
}

impl CollectivePhase {
    fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            1 => CollectivePhase::ReduceScatter,
            2 => CollectivePhase::AllGather,
            3 => CollectivePhase::BroadcastLength,
            4 => CollectivePhase::BroadcastData,
            5 => CollectivePhase::Barrier,
            6 => CollectivePhase::Gather,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            CollectivePhase::ReduceScatter => "all-reduce reduce-scatter",
            CollectivePhase::AllGather => "all-reduce all-gather",
            CollectivePhase::BroadcastLength => "broadcast length",
            CollectivePhase::BroadcastData => "broadcast data",
            CollectivePhase::Barrier => "barrier",
            CollectivePhase::Gather => "gather",
        }
    }
}

/// A collective message's tag: phase (8 bits), step (24 bits), segment (32 bits).
///
/// Steps and segments wrap beyond their widths; that is harmless because transports keep
/// messages of one tag from one peer in order, and collectives receive in sending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag {
    /// The collective and its half.
    pub phase: CollectivePhase,
    /// The ring step (or barrier round); 24 bits.
    pub step: u32,
    /// The segment within the step's chunk.
    pub segment: u32,
}

const STEP_MASK: u32 = (1 << 24) - 1;

impl Tag {
    /// The tag of `segment` of `step` of `phase` (wrapping as described on [`Tag`]).
    pub fn new(phase: CollectivePhase, step: usize, segment: usize) -> Self {
        Self {
            phase,
            step: step as u32 & STEP_MASK,
            segment: segment as u32,
        }
    }

    /// The tag as a transport carries it.
    pub fn encode(self) -> u64 {
        (self.phase as u64) << 56 | u64::from(self.step & STEP_MASK) << 32 | u64::from(self.segment)
    }

    /// The collective tag `tag` encodes, `None` for a tag outside the collectives' space.
    pub fn decode(tag: u64) -> Option<Self> {
        Some(Self {
            phase: CollectivePhase::from_byte((tag >> 56) as u8)?,
            step: (tag >> 32) as u32 & STEP_MASK,
            segment: tag as u32,
        })
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} step {} segment {}",
            self.phase.name(),
            self.step,
            self.segment
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_stay_out_of_the_callers_space() {
        for phase in [
            CollectivePhase::ReduceScatter,
            CollectivePhase::AllGather,
            CollectivePhase::BroadcastLength,
            CollectivePhase::BroadcastData,
            CollectivePhase::Barrier,
        ] {
            let tag = Tag::new(phase, 3, 70_000);
            assert_eq!(Tag::decode(tag.encode()), Some(tag));
            assert_ne!(tag.encode() >> 56, 0);
        }
        assert_eq!(Tag::decode(42), None);
        assert_eq!(
            Tag::new(CollectivePhase::AllGather, 1, 2).to_string(),
            "all-reduce all-gather step 1 segment 2"
        );
    }

    #[test]
    fn distinct_positions_get_distinct_tags() {
        let a = Tag::new(CollectivePhase::ReduceScatter, 1, 2).encode();
        let b = Tag::new(CollectivePhase::ReduceScatter, 2, 1).encode();
        let c = Tag::new(CollectivePhase::AllGather, 1, 2).encode();
        assert!(a != b && a != c && b != c);
        assert_eq!(Tag::new(CollectivePhase::Barrier, 1 << 24, 0).step, 0);
    }
}
