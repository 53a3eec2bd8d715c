//! The receiving end of one peer's messages: tag matching over what its stream
//! delivered, in order, with messages of other tags kept for later.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::address::is_same_host;
use super::config::LATENCY_BOUND_BYTES;
use super::inbound::Delivery;
use super::payload::Payload;
use super::peer_watch::{Missing, PeerWatch};
use crate::distribute::collective_fault::{CollectiveFault, Result};

/// Messages from one peer to this rank.
pub(super) struct Inbox {
    peer: usize,
    deliveries: Receiver<Delivery>,
    /// Messages that arrived before they were asked for, by tag, oldest first.
    early: HashMap<u64, VecDeque<Payload>>,
    /// Why the peer's stream ended, once it has.
    ended: Option<String>,
    /// How long a wait polls, yielding the core, before it sleeps (see
    /// [`GrpcConfig::busy_poll`](super::GrpcConfig::busy_poll)).
    busy_poll: Duration,
    /// The length of the last message taken, which says whether the next wait polls.
    last_len: usize,
}

impl Inbox {
    pub(super) fn new(peer: usize, deliveries: Receiver<Delivery>, busy_poll: Duration) -> Self {
        Self {
            peer,
            deliveries,
            early: HashMap::new(),
            ended: None,
            busy_poll,
            last_len: 0,
        }
    }

    /// [`recv_payload`](Inbox::recv_payload) gathered into one vector.
    #[cfg(test)]
    pub(super) fn recv(
        &mut self,
        me: usize,
        tag: u64,
        timeout: Duration,
        watch: &PeerWatch,
    ) -> Result<Vec<u8>> {
        self.recv_payload(me, tag, timeout, watch)
            .map(Payload::into_vec)
    }

    /// The oldest message with `tag`, in the pieces it arrived in, waiting at most `timeout`
    /// for it. Once the peer's stream has ended, the messages it delivered are still
    /// returned, then the end is reported at once.
    ///
    /// While waiting, `watch` says which peers are missing: one whose stream broke, or one
    /// silent (not even a heartbeat) for the whole `timeout`, ends the wait at once, named
    /// whichever peer this rank waits for — the same on every rank, so the task blocked
    /// behind a missing one is not blamed. Past `watch.stall_warning` the wait is logged
    /// once with the peers that went quiet.
    pub(super) fn recv_payload(
        &mut self,
        me: usize,
        tag: u64,
        timeout: Duration,
        watch: &PeerWatch,
    ) -> Result<Payload> {
        if let Some(payload) = self.early.get_mut(&tag).and_then(VecDeque::pop_front) {
            self.last_len = payload.len();
            return Ok(payload);
        }
        let started = Instant::now();
        let deadline = started + timeout;
        let mut warned = false;
        loop {
            let now = Instant::now();
            // Checked first: the stream of a peer that gave up ends too, and its word says
            // whom it found missing.
            if let Some((peer, missing)) = watch.missing(now, timeout).into_iter().next() {
                return Err(gone(me, peer, missing));
            }
            if self.ended.is_some() {
                break;
            }
            if !warned && now - started >= watch.stall_warning {
                warned = true;
                watch.warn_stall(self.peer, now - started, now);
            }
            if now >= deadline {
                // Name a peer that went quiet if there is one: the one this rank waits for
                // may only be blocked behind it.
                let quiet = watch.missing(now, watch.heartbeat * 3).into_iter().next();
                return Err(match quiet {
                    Some((peer, missing)) if peer != self.peer => gone(me, peer, missing),
                    _ => CollectiveFault::peer(
                        self.peer,
                        format!(
                            "did not answer rank {me} within {timeout:?} (waiting for tag \
                             {tag:#x})"
                        ),
                    ),
                });
            }
            let slice = watch.heartbeat.min(deadline - now);
            let polled = self.poll(started + self.poll_window());
            match polled.or_else(|_| self.deliveries.recv_timeout(slice)) {
                Ok(Delivery::Message { tag: t, payload }) if t == tag => {
                    self.last_len = payload.len();
                    return Ok(payload);
                }
                Ok(Delivery::Message { tag: t, payload }) => {
                    self.early.entry(t).or_default().push_back(payload)
                }
                Ok(Delivery::Ended(reason)) => self.ended = Some(reason),
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = Some("its stream stopped".into());
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        let reason = self.ended.as_deref().unwrap_or_default();
        Err(CollectiveFault::peer(
            self.peer,
            format!("connection lost ({reason}) before rank {me} received tag {tag:#x}"),
        ))
    }
}

/// How long this rank's waits poll: `configured`, unless the ranks on this machine
/// (`addresses` local like `addresses[rank]`) outnumber its cores: then a polling rank would
/// hold a core that a rank it waits for needs, and waits sleep at once.
pub(super) fn busy_poll_for(configured: Duration, addresses: &[String], rank: usize) -> Duration {
    let here = |address: &String| is_same_host(address);
    let ranks_here = if addresses.get(rank).is_some_and(here) {
        addresses.iter().filter(|a| here(a)).count()
    } else {
        1
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if ranks_here > cores {
        Duration::ZERO
    } else {
        configured
    }
}

impl Inbox {
    /// How long the next wait polls: not at all after a message over
    /// [`LATENCY_BOUND_BYTES`]. Moving a larger one takes long enough that a sleeping wait
    /// costs little beside it, and a polling one would take the core that the copies of its
    /// bytes need (measured: the 17 M-parameter network's 256 KiB segments ran at half
    /// speed with polling on two cores).
    fn poll_window(&self) -> Duration {
        if self.last_len <= LATENCY_BOUND_BYTES {
            self.busy_poll
        } else {
            Duration::ZERO
        }
    }

    /// The next event, if one arrives before `until`: the core is yielded between looks,
    /// so the threads that deliver it (or another rank's, on a busy machine) still run.
    /// A message that arrives while this thread polls costs no wake-up: across a small
    /// all-reduce, these wake-ups are most of the time on a machine whose cores are
    /// virtual.
    fn poll(&self, until: Instant) -> std::result::Result<Delivery, RecvTimeoutError> {
        loop {
            match self.deliveries.try_recv() {
                Ok(event) => return Ok(event),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) if Instant::now() >= until => {
                    return Err(RecvTimeoutError::Timeout)
                }
                Err(TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
    }
}

/// The error naming `peer`, missing as `missing`, that ends rank `me`'s wait.
fn gone(me: usize, peer: usize, missing: Missing) -> CollectiveFault {
    let message = match missing {
        Missing::Silent(silence) => format!(
            "sent nothing, not even a heartbeat, for {silence:.1?} (stopped, hung or cut off); \
             rank {me} gives up"
        ),
        Missing::Lost(reason) => format!("connection lost ({reason}); rank {me} gives up"),
        Missing::GaveUpOn(by) if by == peer => {
            format!("failed and left the cluster; rank {me} gives up")
        }
        Missing::GaveUpOn(by) => {
            format!("rank {by} gave up waiting for it; rank {me} gives up too")
        }
    };
    CollectiveFault::peer(peer, message)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;

    fn message(tag: u64, byte: u8) -> Delivery {
        Delivery::Message {
            tag,
            payload: vec![byte].into(),
        }
    }

    #[test]
    fn tags_are_matched_in_order_and_the_end_comes_after_the_messages() {
        let (tx, rx) = channel();
        let mut inbox = Inbox::new(2, rx, Duration::ZERO);
        for event in [message(7, 1), message(9, 2), message(7, 3)] {
            tx.send(event).unwrap();
        }
        tx.send(Delivery::Ended("it shut down".into())).unwrap();
        let timeout = Duration::from_secs(5);
        let watch = watch();
        assert_eq!(inbox.recv(0, 9, timeout, &watch).unwrap(), vec![2]);
        assert_eq!(inbox.recv(0, 7, timeout, &watch).unwrap(), vec![1]);
        let start = Instant::now();
        let err = inbox.recv(0, 8, timeout, &watch).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(
            err.to_string(),
            "rank 2: connection lost (it shut down) before rank 0 received tag 0x8"
        );
        assert_eq!(inbox.recv(0, 7, timeout, &watch).unwrap(), vec![3]);
        assert!(inbox.recv(0, 7, timeout, &watch).is_err());
    }

    #[test]
    fn a_polling_wait_takes_a_message_that_comes_after_its_poll_and_stops_polling_after_a_large_one(
    ) {
        let (tx, rx) = channel();
        let poll = Duration::from_millis(1);
        let mut inbox = Inbox::new(1, rx, poll);
        let watch = watch();
        assert_eq!(inbox.poll_window(), poll);
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            tx.send(message(5, 1)).unwrap();
            tx.send(Delivery::Message {
                tag: 6,
                payload: vec![2; LATENCY_BOUND_BYTES + 1].into(),
            })
            .unwrap();
            tx.send(message(7, 3)).unwrap();
        });
        let timeout = Duration::from_secs(5);
        let got = with_heartbeats(&watch, &[1, 2], || inbox.recv(0, 5, timeout, &watch));
        assert_eq!(got.unwrap(), vec![1]);
        assert_eq!(inbox.poll_window(), poll, "after a small message");
        late.join().unwrap();
        assert_eq!(
            inbox.recv(0, 6, timeout, &watch).unwrap().len(),
            LATENCY_BOUND_BYTES + 1
        );
        assert_eq!(inbox.poll_window(), Duration::ZERO, "after a large message");
        assert_eq!(inbox.recv(0, 7, timeout, &watch).unwrap(), vec![3]);
        assert_eq!(inbox.poll_window(), poll);
    }

    #[test]
    fn waits_poll_only_where_the_machine_has_a_core_for_each_of_its_ranks() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let local = |n: usize| -> Vec<String> {
            (0..n).map(|i| format!("127.0.0.1:{}", 1000 + i)).collect()
        };
        let poll = Duration::from_millis(1);
        assert_eq!(busy_poll_for(poll, &local(cores), 0), poll);
        assert_eq!(busy_poll_for(poll, &local(cores + 1), 0), Duration::ZERO);
        let mut elsewhere = local(cores + 1);
        elsewhere[0] = "10.1.2.3:1000".into();
        assert_eq!(busy_poll_for(poll, &elsewhere, 0), poll);
    }

    /// A watch over 3 ranks seen from rank 0, heartbeats every 10 ms.
    fn watch() -> PeerWatch {
        let names = vec!["chief:0".into(), "worker:0".into(), "worker:1".into()];
        PeerWatch::new(
            0,
            3,
            names,
            Duration::from_millis(10),
            Duration::from_secs(60),
        )
    }

    /// Runs `f` with `peers` heartbeating into `watch` meanwhile.
    fn with_heartbeats<T>(watch: &PeerWatch, peers: &[usize], f: impl FnOnce() -> T) -> T {
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peers.iter().for_each(|&p| watch.heard(p));
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let out = f();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            out
        })
    }

    #[test]
    fn an_alive_peer_that_does_not_answer_times_out_naming_it() {
        let (_tx, rx) = channel();
        let mut inbox = Inbox::new(1, rx, Duration::from_millis(1));
        let watch = watch();
        let timeout = Duration::from_millis(100);
        let err = with_heartbeats(&watch, &[1, 2], || inbox.recv(0, 3, timeout, &watch));
        assert!(err
            .unwrap_err()
            .to_string()
            .starts_with("rank 1: did not answer rank 0 within 100ms"),);
    }

    #[test]
    fn a_silent_peer_is_named_though_the_wait_is_for_another() {
        let (_tx, rx) = channel();
        let mut inbox = Inbox::new(1, rx, Duration::from_millis(1));
        let watch = watch();
        let timeout = Duration::from_millis(150);
        let started = Instant::now();
        let err = with_heartbeats(&watch, &[1], || inbox.recv(0, 3, timeout, &watch));
        let err = err.unwrap_err().to_string();
        assert!(
            err.starts_with("rank 2: sent nothing, not even a heartbeat"),
            "{err}"
        );
        assert!(started.elapsed() < timeout * 2, "{:?}", started.elapsed());
    }

    #[test]
    fn a_lost_peer_ends_every_wait_at_once_and_a_vanished_one_is_reported() {
        let (tx, rx) = channel();
        let mut inbox = Inbox::new(1, rx, Duration::from_millis(1));
        let watch = watch();
        watch.ended(2, Some("its stream broke: reset".into()));
        let started = Instant::now();
        let err = inbox
            .recv(0, 3, Duration::from_secs(5), &watch)
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(
            err.to_string(),
            "rank 2: connection lost (its stream broke: reset); rank 0 gives up"
        );
        watch.ended(2, None);
        drop(tx);
        let err = with_heartbeats(&watch, &[1], || {
            inbox.recv(0, 3, Duration::from_secs(5), &watch)
        });
        assert!(err.unwrap_err().to_string().contains("connection lost"));
    }
}
