//! The ring all-reduce as a pure schedule: which segment each rank sends and receives, in
//! which order, with no I/O.

use std::ops::Range;

use super::partition::{check_rank, part, segment, segment_count};
use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::{CollectiveFault, Result};

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
        if segment_len == 0 {
            return Err(CollectiveFault::invalid(
                "segments must hold at least one element",
            ));
        }
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
        let first = (hops > 0).then(|| self.hop(0));
        let first_sends = first.as_ref().map_or(0, Hop::sends);
        let first_recvs = first.as_ref().map_or(0, Hop::recvs);
        let longest = (0..hops).map(|h| self.hop(h).recvs()).max().unwrap_or(0);
        let lag = self.window.min(longest.max(1));
        let waves = longest + hops.saturating_sub(1) * lag;
        let opening =
            (0..first_sends.min(self.window)).filter_map(move |k| Some(first.as_ref()?.send(k)));
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
mod tests {
    use std::collections::{HashMap, VecDeque};

    use super::*;

    /// Runs every rank's schedule in one thread, each as far as its messages allow, until all
    /// finish; panics on a deadlock. Also returns the most messages that were ever in flight
    /// on one link at once.
    fn simulate(
        inputs: Vec<Vec<f32>>,
        segment_len: usize,
        window: usize,
    ) -> (Vec<Vec<f32>>, usize) {
        let n = inputs.len();
        let len = inputs[0].len();
        let schedules: Vec<_> = (0..n)
            .map(|r| {
                RingSchedule::new(r, n, len, segment_len)
                    .unwrap()
                    .with_window(window)
            })
            .collect();
        let actions: Vec<Vec<Action>> = schedules.iter().map(|s| s.actions().collect()).collect();
        let mut next = vec![0; n];
        let mut bufs = inputs;
        let mut mail: HashMap<(usize, usize, u64), VecDeque<Vec<f32>>> = HashMap::new();
        let (mut in_flight, mut most_in_flight) = (vec![0usize; n], 0);
        while (0..n).any(|r| next[r] < actions[r].len()) {
            let mut progressed = false;
            for r in 0..n {
                while let Some(action) = actions[r].get(next[r]) {
                    match action {
                        Action::Send { to, tag, range } => {
                            let key = (r, *to, tag.encode());
                            let payload = bufs[r][range.clone()].to_vec();
                            mail.entry(key).or_default().push_back(payload);
                            in_flight[r] += 1;
                            most_in_flight = most_in_flight.max(in_flight[r]);
                        }
                        Action::Recv {
                            from,
                            tag,
                            range,
                            combine,
                        } => {
                            let key = (*from, r, tag.encode());
                            let Some(payload) = mail.get_mut(&key).and_then(|q| q.pop_front())
                            else {
                                break;
                            };
                            assert_eq!(payload.len(), range.len());
                            in_flight[*from] -= 1;
                            for (d, v) in bufs[r][range.clone()].iter_mut().zip(payload) {
                                match combine {
                                    Combine::Add => *d += v,
                                    Combine::Copy => *d = v,
                                }
                            }
                        }
                    }
                    next[r] += 1;
                    progressed = true;
                }
            }
            assert!(progressed, "deadlock: {next:?}");
        }
        assert!(mail.values().all(VecDeque::is_empty), "unreceived messages");
        (bufs, most_in_flight)
    }

    #[test]
    fn three_ranks_follow_the_textbook_ring() {
        let s = RingSchedule::new(0, 3, 9, 100).unwrap();
        assert_eq!(s.reduce_scatter_step(0), (0, 2));
        assert_eq!(s.reduce_scatter_step(1), (2, 1));
        assert_eq!(s.owned_chunk(), 1);
        assert_eq!(s.all_gather_step(0), (1, 0));
        assert_eq!(s.all_gather_step(1), (0, 2));
        let actions: Vec<_> = s.actions().collect();
        assert_eq!(actions.len(), 8);
        assert_eq!(
            actions[0],
            Action::Send {
                to: 1,
                tag: Tag::new(CollectivePhase::ReduceScatter, 0, 0),
                range: 0..3
            }
        );
        assert_eq!(
            actions[1],
            Action::Recv {
                from: 2,
                tag: Tag::new(CollectivePhase::ReduceScatter, 0, 0),
                range: 6..9,
                combine: Combine::Add
            }
        );
    }

    #[test]
    fn a_chunk_received_is_sent_on_in_the_next_step() {
        for n in 2..6 {
            for r in 0..n {
                let s = RingSchedule::new(r, n, 100, 7).unwrap();
                let prev = RingSchedule::new((r + n - 1) % n, n, 100, 7).unwrap();
                for step in 0..s.steps() {
                    assert_eq!(
                        s.reduce_scatter_step(step).1,
                        prev.reduce_scatter_step(step).0
                    );
                    assert_eq!(s.all_gather_step(step).1, prev.all_gather_step(step).0);
                }
                for step in 1..s.steps() {
                    let received = s.reduce_scatter_step(step - 1).1;
                    assert_eq!(s.reduce_scatter_step(step).0, received);
                    assert_eq!(s.all_gather_step(step).0, s.all_gather_step(step - 1).1);
                }
                assert_eq!(s.all_gather_step(0).0, s.owned_chunk());
            }
        }
    }

    #[test]
    fn every_shape_sums_exactly_without_deadlock() {
        for n in 1..=5 {
            for len in 0..=13 {
                for (segment_len, window) in
                    (1..=4).flat_map(|s| [1, 2, 3, usize::MAX].map(|w| (s, w)))
                {
                    // Small integers: every order of summation is exact.
                    let inputs: Vec<Vec<f32>> = (0..n)
                        .map(|r| (0..len).map(|i| (r * 31 + i * 7 % 11) as f32).collect())
                        .collect();
                    let expected: Vec<f32> = (0..len)
                        .map(|i| inputs.iter().map(|v| v[i]).sum())
                        .collect();
                    let (out, _) = simulate(inputs, segment_len, window);
                    for (r, buf) in out.iter().enumerate() {
                        assert_eq!(
                            buf, &expected,
                            "n={n} len={len} seg={segment_len} window={window} rank={r}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_window_bounds_what_is_in_flight() {
        // 500 segments per chunk: unbounded, a whole chunk is in flight on a link at once;
        // with a window, at most `window` segments of each hop per rank the sender can be
        // ahead of the receiver by (the simulation lets one rank run as far as it can).
        for n in 2..=5 {
            let inputs = || vec![vec![1.0; 1000 * n]; n];
            let (_, unbounded) = simulate(inputs(), 2, usize::MAX);
            assert!(unbounded >= 500, "n={n}: {unbounded}");
            for window in 1..=4 {
                let (out, most) = simulate(inputs(), 2, window);
                assert!(out.iter().flatten().all(|&v| v == n as f32));
                let bound = 2 * (n - 1) * n * window;
                assert!(most <= bound, "n={n} window={window}: {most} > {bound}");
            }
        }
    }

    #[test]
    fn one_rank_or_an_empty_buffer_sends_nothing() {
        assert_eq!(RingSchedule::new(0, 1, 10, 1).unwrap().actions().count(), 0);
        assert_eq!(RingSchedule::new(2, 4, 0, 1).unwrap().actions().count(), 0);
        // Fewer elements than ranks: only the non-empty chunks travel.
        let s = RingSchedule::new(0, 4, 2, 1).unwrap();
        assert!(s.actions().all(|a| match a {
            Action::Send { range, .. } | Action::Recv { range, .. } => range.len() == 1,
        }));
    }

    #[test]
    fn segments_split_chunks_and_tags_number_them() {
        let s = RingSchedule::new(1, 2, 10, 2).unwrap();
        let sends: Vec<_> = s
            .actions()
            .filter_map(|a| match a {
                Action::Send { tag, range, .. } if tag.phase == CollectivePhase::ReduceScatter => {
                    Some((tag.segment, range))
                }
                _ => None,
            })
            .collect();
        assert_eq!(sends, vec![(0, 5..7), (1, 7..9), (2, 9..10)]);
    }

    /// A schedule's messages in order: `s`/`r` (send, receive), the phase, the segment.
    fn order(s: RingSchedule) -> String {
        let name = |a: Action| match a {
            Action::Send { tag, .. } => format!("s{}{}", tag.phase as u8, tag.segment),
            Action::Recv { tag, .. } => format!("r{}{}", tag.phase as u8, tag.segment),
        };
        s.actions().map(name).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_received_segment_is_sent_on_before_the_next_one_is_awaited() {
        // Two ranks, 4 segments per chunk: all of the first hop leaves at once, then every
        // reduced segment goes back out right after it arrived.
        let s = RingSchedule::new(0, 2, 16, 2).unwrap();
        assert_eq!(
            order(s),
            "s10 s11 s12 s13 r10 s20 r11 s21 r12 s22 r13 s23 r20 r21 r22 r23"
        );
        // A window of one segment: the first hop's next segment leaves as one arrives, and
        // each hop's receives trail the hop before by one.
        assert_eq!(
            order(s.with_window(1)),
            "s10 r10 s20 s11 r20 r11 s21 s12 r21 r12 s22 s13 r22 r13 s23 r23"
        );
        assert!(s.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 0, 3)));
        assert!(!s.completes_reduction(Tag::new(CollectivePhase::AllGather, 0, 3)));
        let four = RingSchedule::new(0, 4, 16, 2).unwrap();
        assert!(!four.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 1, 0)));
        assert!(four.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 2, 0)));
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(RingSchedule::new(2, 2, 1, 1).is_err());
        assert!(RingSchedule::new(0, 0, 1, 1).is_err());
        assert!(RingSchedule::new(0, 2, 1, 0).is_err());
    }
}
