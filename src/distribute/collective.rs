//! Collectives over a [`Transport`](super::Transport): ring all-reduce (reduce-scatter then
//! all-gather, pipelined segment by segment, optionally in 16 bits on the wire), halving and
//! doubling for small buffers, chain broadcast and dissemination barrier.
//! The schedules are pure values; the functions here only move their messages.

mod all_gather;
mod all_reduce;
mod barrier;
mod broadcast;
mod compression;
mod config;
mod halving_doubling;
mod hierarchical;
mod partition;
mod payload_codec;
mod reduce;
mod ring_schedule;
#[cfg(test)]
mod simulation;
mod split_pass;
mod tag;

pub use all_gather::all_gather;
pub use all_reduce::{all_reduce_mean, all_reduce_mean_with, all_reduce_sum, all_reduce_sum_with};
pub(crate) use all_reduce::{timed_all_reduce, Reduce};
pub use barrier::{barrier, dissemination_rounds};
pub use broadcast::{broadcast, broadcast_with, BroadcastChain};
pub use compression::Compression;
pub use config::{CollectiveConfig, DEFAULT_SEGMENT_BYTES};
pub(crate) use payload_codec::encode_into;
pub use ring_schedule::{Action, Combine, RingSchedule};
pub use tag::{CollectivePhase, Tag};
