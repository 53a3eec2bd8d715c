//! The ring all-reduce as a pure schedule: which segment each rank sends and receives, in
//! which order, with no I/O.

use std::ops::Range;

use super::partition::{check_rank, part, segment, segment_count};
use super::{Phase, Tag};
use crate::distribute::error::{DistributeError, Result};

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
/// Each chunk travels as segments of at most `segment_len` elements; within a step a rank
/// sends segment `k` then receives segment `k`, so a transport with buffered sends never
/// deadlocks and a large chunk streams. Empty segments are not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSchedule {
    rank: usize,
    world_size: usize,
    len: usize,
    segment_len: usize,
}

impl RingSchedule {
    /// The schedule of `rank` among `world_size` ranks for a buffer of `len` elements sent in
    /// segments of at most `segment_len` elements.
    pub fn new(rank: usize, world_size: usize, len: usize, segment_len: usize) -> Result<Self> {
        check_rank("rank", rank, world_size)?;
        if segment_len == 0 {
            return Err(DistributeError::invalid(
                "segments must hold at least one element",
            ));
        }
        Ok(Self {
            rank,
            world_size,
            len,
            segment_len,
        })
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
    pub fn actions(&self) -> impl Iterator<Item = Action> + '_ {
        let reduce = (0..self.steps()).flat_map(|s| self.step_actions(Phase::ReduceScatter, s));
        let gather = (0..self.steps()).flat_map(|s| self.step_actions(Phase::AllGather, s));
        reduce.chain(gather)
    }

    fn step_actions(&self, phase: Phase, step: usize) -> impl Iterator<Item = Action> + '_ {
        let ((send, recv), combine) = match phase {
            Phase::ReduceScatter => (self.reduce_scatter_step(step), Combine::Add),
            _ => (self.all_gather_step(step), Combine::Copy),
        };
        let (send, recv) = (self.chunk(send), self.chunk(recv));
        let (sends, recvs) = (
            segment_count(&send, self.segment_len),
            segment_count(&recv, self.segment_len),
        );
        let n = self.world_size;
        let (to, from) = ((self.rank + 1) % n, (self.rank + n - 1) % n);
        (0..sends.max(recvs)).flat_map(move |k| {
            let tag = Tag::new(phase, step, k);
            let send = (k < sends).then(|| Action::Send {
                to,
                tag,
                range: segment(&send, self.segment_len, k),
            });
            let recv = (k < recvs).then(|| Action::Recv {
                from,
                tag,
                range: segment(&recv, self.segment_len, k),
                combine,
            });
            send.into_iter().chain(recv)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use super::*;

    /// Runs every rank's schedule in one thread, each as far as its messages allow, until all
    /// finish; panics on a deadlock.
    fn simulate(inputs: Vec<Vec<f32>>, segment_len: usize) -> Vec<Vec<f32>> {
        let n = inputs.len();
        let len = inputs[0].len();
        let schedules: Vec<_> = (0..n)
            .map(|r| RingSchedule::new(r, n, len, segment_len).unwrap())
            .collect();
        let actions: Vec<Vec<Action>> = schedules.iter().map(|s| s.actions().collect()).collect();
        let mut next = vec![0; n];
        let mut bufs = inputs;
        let mut mail: HashMap<(usize, usize, u64), VecDeque<Vec<f32>>> = HashMap::new();
        while (0..n).any(|r| next[r] < actions[r].len()) {
            let mut progressed = false;
            for r in 0..n {
                while let Some(action) = actions[r].get(next[r]) {
                    match action {
                        Action::Send { to, tag, range } => {
                            let key = (r, *to, tag.encode());
                            let payload = bufs[r][range.clone()].to_vec();
                            mail.entry(key).or_default().push_back(payload);
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
        bufs
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
                tag: Tag::new(Phase::ReduceScatter, 0, 0),
                range: 0..3
            }
        );
        assert_eq!(
            actions[1],
            Action::Recv {
                from: 2,
                tag: Tag::new(Phase::ReduceScatter, 0, 0),
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
                for segment_len in 1..=4 {
                    // Small integers: every order of summation is exact.
                    let inputs: Vec<Vec<f32>> = (0..n)
                        .map(|r| (0..len).map(|i| (r * 31 + i * 7 % 11) as f32).collect())
                        .collect();
                    let expected: Vec<f32> = (0..len)
                        .map(|i| inputs.iter().map(|v| v[i]).sum())
                        .collect();
                    let out = simulate(inputs, segment_len);
                    for (r, buf) in out.iter().enumerate() {
                        assert_eq!(buf, &expected, "n={n} len={len} seg={segment_len} rank={r}");
                    }
                }
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
                Action::Send { tag, range, .. } if tag.phase == Phase::ReduceScatter => {
                    Some((tag.segment, range))
                }
                _ => None,
            })
            .collect();
        assert_eq!(sends, vec![(0, 5..7), (1, 7..9), (2, 9..10)]);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(RingSchedule::new(2, 2, 1, 1).is_err());
        assert!(RingSchedule::new(0, 0, 1, 1).is_err());
        assert!(RingSchedule::new(0, 2, 1, 0).is_err());
    }
}
