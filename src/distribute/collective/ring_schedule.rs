//! The ring all-reduce as a pure schedule: which segment each rank sends and receives, in
//! which order, with no I/O.

use std::ops::Range;

use super::partition::{check_rank, check_segment_len, part, segment, segment_count};
use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::Result;

/// What a received segment does to the local buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Add it element-wise (reduce-scatter).
    Add,
    /// Overwrite with it (all-gather).
    Copy,
}

/// One message a rank sends or receives, over a range of its buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `buffer[range]` to rank `to` under `tag`.
    Send {
        /// The receiving rank (the next one on the ring).
        to: usize,
        /// The message's tag.
        tag: Tag,
        /// The elements sent.
        range: Range<usize>,
    },
    /// Receive the message with `tag` from rank `from` and fold it into `buffer[range]`.
    Recv {
        /// The sending rank (the previous one on the ring).
        from: usize,
        /// The message's tag.
        tag: Tag,
        /// The elements received.
        range: Range<usize>,
        /// How they are folded in.
        combine: Combine,
    },
}

/// Ring all-reduce of `len` elements for one rank of `world_size`.
///
/// The buffer is cut into `world_size` chunks. In reduce-scatter step `s` rank `r` sends
/// chunk `r - s` to rank `r + 1` and adds chunk `r - s - 1` from rank `r - 1` (mod
/// `world_size`), so after `world_size - 1` steps it holds chunk `r + 1` summed over all ranks,
/// accumulated in ring order starting at rank `r + 1`. In all-gather step `s` it sends chunk
/// `r + 1 - s` and overwrites chunk `r - s` with what it receives. Every element is summed by
/// exactly one rank and copied byte for byte to the others, so all ranks end bit-identical.
///
/// Each chunk travels as segments of at most `segment_len` elements, pipelined as NCCL's
/// ring is: the 2(n−1) steps form one chain of hops (what a rank receives in one step is
/// what it sends in the next, the reduced chunk of the last reduce-scatter step included),
/// so segment `k` moves on as soon as it has arrived, while the segments after it are still
/// on the wire. A rank sends the first `window` segments of its first hop at once, then for
/// each segment received sends it on, and one more of its first hop for each of the first
/// hop's received: every link carries up to `window` segments of each hop at a time. The
/// receives run in waves (see [`RingSchedule::actions`]), so what is in flight, and the
/// memory it occupies at the receiver, stays bounded by the window however large the buffer;
/// with buffered sends no rank ever waits for a message that nobody has sent. Empty segments
/// are not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSchedule {
    rank: usize,
    world_size: usize,
    len: usize,
    segment_len: usize,
    /// Segments of one hop in flight per link at most (at least 1).
    window: usize,
}

impl RingSchedule {
    /// The schedule of `rank` among `world_size` ranks for a buffer of `len` elements sent in
    /// segments of at most `segment_len` elements.
    pub fn new(rank: usize, world_size: usize, len: usize, segment_len: usize) -> Result<Self> {
        check_rank("rank", rank, world_size)?;
        check_segment_len(segment_len)?;
        Ok(Self {
            rank,
            world_size,
            len,
            segment_len,
            window: usize::MAX,
        })
    }

    /// This schedule with at most `window` segments (at least one) of each hop in flight
    /// per link.
    pub fn with_window(self, window: usize) -> Self {
        Self {
            window: window.max(1),
            ..self
        }
    }

    /// The elements of chunk `chunk`.
    pub fn chunk(&self, chunk: usize) -> Range<usize> {
        part(self.len, self.world_size, chunk)
    }

    /// Steps per half (reduce-scatter, all-gather): `world_size - 1`.
    pub fn steps(&self) -> usize {
        self.world_size - 1
    }

    /// The chunk this rank holds fully reduced after reduce-scatter.
    pub fn owned_chunk(&self) -> usize {
        (self.rank + 1) % self.world_size
    }

    /// (chunk sent, chunk received and added) in reduce-scatter step `step`.
    pub fn reduce_scatter_step(&self, step: usize) -> (usize, usize) {
        let n = self.world_size;
        (
            (self.rank + n - step % n) % n,
            (self.rank + 2 * n - step % n - 1) % n,
        )
    }

    /// (chunk sent, chunk received and copied) in all-gather step `step`.
    pub fn all_gather_step(&self, step: usize) -> (usize, usize) {
        let n = self.world_size;
        (
            (self.rank + 1 + n - step % n) % n,
            (self.rank + n - step % n) % n,
        )
    }

    /// Every message of the all-reduce for this rank, in the order it must happen.
    ///
    /// Receives run in waves: in wave `t`, segment `t - h·window` of each hop `h` (the later
    /// hops first), each followed by its send onward and, in the first hop, by the send of
    /// the first hop's segment `window` further on. What a receive of wave `t` waits for was
    /// sent in an earlier wave (or before the first), so no rank waits on a wave that the
    /// others have not reached: the order cannot deadlock. With a window of a whole chunk or
    /// more this is hop after hop, every segment of the first hop sent at once.
    pub fn actions(&self) -> impl Iterator<Item = Action> + '_ {
        let hops = 2 * self.steps();
        let (first_sends, first_recvs) = match hops {
            0 => (0, 0),
            _ => (self.hop(0).sends(), self.hop(0).recvs()),
        };
        let longest = (0..hops).map(|h| self.hop(h).recvs()).max().unwrap_or(0);
        let lag = self.window.min(longest.max(1));
        let waves = longest + hops.saturating_sub(1) * lag;
        let opening = (0..first_sends.min(self.window)).map(move |k| self.hop(0).send(k));
        let chain = (0..waves).flat_map(move |t| {
            (0..hops).rev().flat_map(move |h| {
                let hop = self.hop(h);
                let k = t.checked_sub(h * lag).filter(|&k| k < hop.recvs());
                let next = (h + 1 < hops).then(|| self.hop(h + 1));
                let onward = k.and_then(|k| {
                    next.as_ref()
                        .filter(|next| k < next.sends())
                        .map(|next| next.send(k))
                });
                // The first hop's sends not yet made, one per segment received in it (the
                // rest after its last receive, when its chunk has more segments).
                let refill = match k {
                    Some(k) if h == 0 => {
                        let upto = if k + 1 == first_recvs {
                            first_sends
                        } else {
                            (k + 1).saturating_add(self.window)
                        };
                        k.saturating_add(self.window).min(first_sends)..upto.min(first_sends)
                    }
                    _ => 0..0,
                };
                k.map(|k| hop.recv(k))
                    .into_iter()
                    .chain(onward)
                    .chain(refill.map(move |j| self.hop(0).send(j)))
            })
        });
        opening.chain(chain)
    }

    /// Whether a message with `tag` completes a segment of this rank's owned chunk: the
    /// last reduce-scatter step, after which the segment is sent round the ring as it is.
    pub fn completes_reduction(&self, tag: Tag) -> bool {
        tag.phase == CollectivePhase::ReduceScatter && tag.step as usize + 1 == self.steps()
    }

    /// Hop `h` of the chain: reduce-scatter steps first, then all-gather steps.
    fn hop(&self, h: usize) -> Hop {
        let steps = self.steps();
        let (phase, step) = if h < steps {
            (CollectivePhase::ReduceScatter, h)
        } else {
            (CollectivePhase::AllGather, h - steps)
        };
        let ((send, recv), combine) = match phase {
            CollectivePhase::ReduceScatter => (self.reduce_scatter_step(step), Combine::Add),
            _ => (self.all_gather_step(step), Combine::Copy),
        };
        let n = self.world_size;
        Hop {
            phase,
            step,
            combine,
            send: self.chunk(send),
            recv: self.chunk(recv),
            segment_len: self.segment_len,
            to: (self.rank + 1) % n,
            from: (self.rank + n - 1) % n,
        }
    }
}

/// One step of the ring as one rank sees it: the chunk it sends on, the chunk it receives.
#[derive(Debug, Clone)]
struct Hop {
    phase: CollectivePhase,
    step: usize,
    combine: Combine,
    send: Range<usize>,
    recv: Range<usize>,
    segment_len: usize,
    to: usize,
    from: usize,
}

impl Hop {
    fn sends(&self) -> usize {
        segment_count(&self.send, self.segment_len)
    }

    fn recvs(&self) -> usize {
        segment_count(&self.recv, self.segment_len)
    }

    fn send(&self, k: usize) -> Action {
        Action::Send {
            to: self.to,
            tag: Tag::new(self.phase, self.step, k),
            range: segment(&self.send, self.segment_len, k),
        }
    }

    fn recv(&self, k: usize) -> Action {
        Action::Recv {
            from: self.from,
            tag: Tag::new(self.phase, self.step, k),
            range: segment(&self.recv, self.segment_len, k),
            combine: self.combine,
        }
    }
}

#[cfg(test)]
mod tests;
