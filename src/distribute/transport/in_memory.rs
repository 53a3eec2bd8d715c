//! A transport between threads of one process: one channel per ordered pair of ranks.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::point_to_point::check_peer;
use super::Transport;
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// How long [`InMemoryTransport::recv`] waits for a peer unless told otherwise.
pub const DEFAULT_RECV_TIMEOUT: Duration = Duration::from_secs(30);

/// One tagged message on a channel.
struct Envelope {
    tag: u64,
    payload: Vec<u8>,
}

/// One rank's end of an in-process cluster built by [`InMemoryTransport::cluster`].
pub struct InMemoryTransport {
    rank: usize,
    world_size: usize,
    /// Channel to each peer (`None` at this rank's own index).
    outboxes: Vec<Option<Sender<Envelope>>>,
    /// Channel from each peer (`None` at this rank's own index).
    inboxes: Vec<Option<Receiver<Envelope>>>,
    /// Messages that arrived before they were asked for, by peer then tag, oldest first.
    early: Vec<HashMap<u64, VecDeque<Vec<u8>>>>,
    timeout: Duration,
}

impl std::fmt::Debug for InMemoryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTransport")
            .field("rank", &self.rank)
            .field("world_size", &self.world_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl InMemoryTransport {
    /// `n` connected ranks (index = rank), each waiting up to [`DEFAULT_RECV_TIMEOUT`].
    pub fn cluster(n: usize) -> Vec<InMemoryTransport> {
        Self::cluster_with_timeout(n, DEFAULT_RECV_TIMEOUT)
    }

    /// `n` connected ranks whose `recv` gives up after `timeout`.
    pub fn cluster_with_timeout(n: usize, timeout: Duration) -> Vec<InMemoryTransport> {
        let mut ranks: Vec<InMemoryTransport> = (0..n)
            .map(|rank| InMemoryTransport {
                rank,
                world_size: n,
                outboxes: (0..n).map(|_| None).collect(),
                inboxes: (0..n).map(|_| None).collect(),
                early: (0..n).map(|_| HashMap::new()).collect(),
                timeout,
            })
            .collect();
        for from in 0..n {
            for to in (0..n).filter(|&to| to != from) {
                let (tx, rx) = channel();
                ranks[from].outboxes[to] = Some(tx);
                ranks[to].inboxes[from] = Some(rx);
            }
        }
        ranks
    }

    /// How long `recv` waits for a peer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes how long `recv` waits for a peer.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }
}

impl Transport for InMemoryTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> Result<()> {
        check_peer(self, to, "send to")?;
        let outbox = self.outboxes[to]
            .as_ref()
            .expect("a channel to every other rank");
        outbox.send(Envelope { tag, payload }).map_err(|_| {
            CollectiveFault::peer(
                to,
                format!(
                    "hung up before rank {} could send it tag {tag:#x}",
                    self.rank
                ),
            )
        })
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u8>> {
        check_peer(self, from, "receive from")?;
        if let Some(payload) = self.early[from].get_mut(&tag).and_then(VecDeque::pop_front) {
            return Ok(payload);
        }
        let inbox = self.inboxes[from]
            .as_ref()
            .expect("a channel from every other rank");
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match inbox.recv_timeout(left) {
                Ok(envelope) if envelope.tag == tag => return Ok(envelope.payload),
                Ok(envelope) => self.early[from]
                    .entry(envelope.tag)
                    .or_default()
                    .push_back(envelope.payload),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CollectiveFault::peer(
                        from,
                        format!(
                            "did not answer rank {} within {:?} (waiting for tag {tag:#x})",
                            self.rank, self.timeout
                        ),
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CollectiveFault::peer(
                        from,
                        format!("hung up before sending rank {} tag {tag:#x}", self.rank),
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short_cluster(n: usize) -> Vec<InMemoryTransport> {
        InMemoryTransport::cluster_with_timeout(n, Duration::from_millis(100))
    }

    #[test]
    fn messages_of_another_tag_wait_for_their_turn_in_order() {
        let mut ranks = short_cluster(2);
        let (a, b) = ranks.split_at_mut(1);
        let (a, b) = (&mut a[0], &mut b[0]);
        a.send(1, 7, vec![1]).unwrap();
        a.send(1, 9, vec![2]).unwrap();
        a.send(1, 7, vec![3]).unwrap();
        a.send(1, 9, vec![4]).unwrap();
        assert_eq!(b.recv(0, 9).unwrap(), vec![2]);
        assert_eq!(b.recv(0, 7).unwrap(), vec![1]);
        assert_eq!(b.recv(0, 9).unwrap(), vec![4]);
        assert_eq!(b.recv(0, 7).unwrap(), vec![3]);
    }

    #[test]
    fn peers_are_kept_apart() {
        let mut ranks = short_cluster(3);
        ranks[1].send(0, 5, vec![1]).unwrap();
        ranks[2].send(0, 5, vec![2]).unwrap();
        assert_eq!(ranks[0].recv(2, 5).unwrap(), vec![2]);
        assert_eq!(ranks[0].recv(1, 5).unwrap(), vec![1]);
        assert_eq!(ranks[0].world_size(), 3);
        assert_eq!(ranks[2].rank(), 2);
    }

    #[test]
    fn a_silent_peer_times_out_with_its_rank_named() {
        let mut ranks = short_cluster(3);
        ranks[2].send(0, 1, vec![0]).unwrap();
        let start = Instant::now();
        let err = ranks[0].recv(2, 3).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(err.rank(), Some(2));
        assert!(err
            .to_string()
            .starts_with("rank 2: did not answer rank 0 within"));
        // The message with the other tag was kept.
        assert_eq!(ranks[0].recv(2, 1).unwrap(), vec![0]);
    }

    #[test]
    fn a_peer_that_went_away_is_named_on_send_and_recv() {
        let mut ranks = short_cluster(2);
        let gone = ranks.pop().unwrap();
        drop(gone);
        let err = ranks[0].send(1, 0, vec![]).unwrap_err();
        assert!(err.to_string().starts_with("rank 1: hung up"), "{err}");
        let err = ranks[0].recv(1, 0).unwrap_err();
        assert!(err.to_string().starts_with("rank 1: hung up"), "{err}");
    }

    #[test]
    fn messages_sent_before_hanging_up_are_still_delivered() {
        let mut ranks = short_cluster(2);
        ranks[1].send(0, 4, vec![9]).unwrap();
        ranks.pop();
        assert_eq!(ranks[0].recv(1, 4).unwrap(), vec![9]);
    }

    #[test]
    fn self_and_out_of_range_peers_are_refused() {
        let mut ranks = short_cluster(2);
        assert!(matches!(
            ranks[0].send(0, 0, vec![]),
            Err(CollectiveFault::Invalid(_))
        ));
        assert!(matches!(
            ranks[0].recv(5, 0),
            Err(CollectiveFault::Invalid(_))
        ));
    }

    #[test]
    fn timeouts_can_be_changed() {
        let mut ranks = InMemoryTransport::cluster(1);
        assert_eq!(ranks[0].timeout(), DEFAULT_RECV_TIMEOUT);
        ranks[0].set_timeout(Duration::from_millis(5));
        assert_eq!(ranks[0].timeout(), Duration::from_millis(5));
    }
}
