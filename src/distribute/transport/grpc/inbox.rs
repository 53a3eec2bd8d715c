//! The receiving end of one peer's messages: tag matching over the events its stream
//! delivered, in order, with messages of other tags kept for later.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::inbound::Event;
use super::wire::Payload;
use crate::distribute::error::{DistributeError, Result};

/// Messages from one peer to this rank.
pub(super) struct Inbox {
    peer: usize,
    events: Receiver<Event>,
    /// Messages that arrived before they were asked for, by tag, oldest first.
    early: HashMap<u64, VecDeque<Payload>>,
    /// Why the peer's stream ended, once it has.
    ended: Option<String>,
}

impl Inbox {
    pub(super) fn new(peer: usize, events: Receiver<Event>) -> Self {
        Self {
            peer,
            events,
            early: HashMap::new(),
            ended: None,
        }
    }

    /// The oldest message with `tag`, waiting at most `timeout` for it. Once the peer's
    /// stream has ended, the messages it delivered are still returned, then the end is
    /// reported at once.
    pub(super) fn recv(&mut self, me: usize, tag: u64, timeout: Duration) -> Result<Vec<u8>> {
        if let Some(payload) = self.early.get_mut(&tag).and_then(VecDeque::pop_front) {
            return Ok(payload.into_vec());
        }
        let deadline = Instant::now() + timeout;
        while self.ended.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Message { tag: t, payload }) if t == tag => return Ok(payload.into_vec()),
                Ok(Event::Message { tag: t, payload }) => {
                    self.early.entry(t).or_default().push_back(payload)
                }
                Ok(Event::Ended(reason)) => self.ended = Some(reason),
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = Some("its stream stopped".into());
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(DistributeError::peer(
                        self.peer,
                        format!(
                            "did not answer rank {me} within {timeout:?} (waiting for tag \
                             {tag:#x})"
                        ),
                    ))
                }
            }
        }
        let reason = self.ended.as_deref().unwrap_or_default();
        Err(DistributeError::peer(
            self.peer,
            format!("connection lost ({reason}) before rank {me} received tag {tag:#x}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;

    fn message(tag: u64, byte: u8) -> Event {
        Event::Message {
            tag,
            payload: vec![byte].into(),
        }
    }

    #[test]
    fn tags_are_matched_in_order_and_the_end_comes_after_the_messages() {
        let (tx, rx) = channel();
        let mut inbox = Inbox::new(2, rx);
        for event in [message(7, 1), message(9, 2), message(7, 3)] {
            tx.send(event).unwrap();
        }
        tx.send(Event::Ended("it shut down".into())).unwrap();
        let timeout = Duration::from_secs(5);
        assert_eq!(inbox.recv(0, 9, timeout).unwrap(), vec![2]);
        assert_eq!(inbox.recv(0, 7, timeout).unwrap(), vec![1]);
        let start = Instant::now();
        let err = inbox.recv(0, 8, timeout).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(
            err.to_string(),
            "rank 2: connection lost (it shut down) before rank 0 received tag 0x8"
        );
        assert_eq!(inbox.recv(0, 7, timeout).unwrap(), vec![3]);
        assert!(inbox.recv(0, 7, timeout).is_err());
    }

    #[test]
    fn a_silent_peer_times_out_and_a_vanished_one_is_reported() {
        let (tx, rx) = channel();
        let mut inbox = Inbox::new(1, rx);
        let err = inbox.recv(0, 3, Duration::from_millis(50)).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("rank 1: did not answer rank 0 within 50ms"));
        drop(tx);
        let err = inbox.recv(0, 3, Duration::from_secs(5)).unwrap_err();
        assert!(err.to_string().contains("connection lost"), "{err}");
    }
}
