//! Broadcast of bytes from one root to every rank, pipelined along a chain of ranks.

use super::partition::{check_rank, segment, segment_count};
use super::{CollectiveConfig, CollectivePhase, Tag};
use crate::distribute::collective_fault::{CollectiveFault, Result};
use crate::distribute::Transport;

/// The chain a broadcast travels: `root`, `root + 1`, … (mod `world_size`), each rank
/// forwarding every segment to the next as soon as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BroadcastChain {
    rank: usize,
    world_size: usize,
    root: usize,
}

impl BroadcastChain {
    /// The chain from `root` as seen by `rank`, among `world_size` ranks.
    pub fn new(rank: usize, world_size: usize, root: usize) -> Result<Self> {
        check_rank("rank", rank, world_size)?;
        check_rank("broadcast root", root, world_size)?;
        Ok(Self {
            rank,
            world_size,
            root,
        })
    }

    /// Hops from the root to this rank.
    pub fn position(&self) -> usize {
        (self.rank + self.world_size - self.root) % self.world_size
    }

    /// The rank this one receives from; `None` for the root.
    pub fn prev(&self) -> Option<usize> {
        (self.position() > 0).then(|| (self.rank + self.world_size - 1) % self.world_size)
    }

    /// The rank this one forwards to; `None` for the last rank of the chain.
    pub fn next(&self) -> Option<usize> {
        (self.position() + 1 < self.world_size).then(|| (self.rank + 1) % self.world_size)
    }
}

/// Makes `data` on every rank a copy of `data` on rank `root` (the chief's initial weights).
pub fn broadcast<T: Transport + ?Sized>(
    transport: &mut T,
    root: usize,
    data: &mut Vec<u8>,
) -> Result<()> {
    broadcast_with(transport, root, data, &CollectiveConfig::default())
}

/// [`broadcast`] with messages cut as `config` says.
pub fn broadcast_with<T: Transport + ?Sized>(
    transport: &mut T,
    root: usize,
    data: &mut Vec<u8>,
    config: &CollectiveConfig,
) -> Result<()> {
    let chain = BroadcastChain::new(transport.rank(), transport.world_size(), root)?;
    let length_tag = Tag::new(CollectivePhase::BroadcastLength, 0, 0);
    let len = match chain.prev() {
        None => data.len(),
        Some(prev) => {
            let header = transport
                .recv(prev, length_tag.encode())
                .map_err(|e| e.during(length_tag))?;
            let header: [u8; 8] = header.as_slice().try_into().map_err(|_| {
                let message = format!("sent a {}-byte length header, not 8", header.len());
                CollectiveFault::peer(prev, message).during(length_tag)
            })?;
            let len = usize::try_from(u64::from_le_bytes(header)).map_err(|_| {
                CollectiveFault::peer(prev, "sent a length beyond this machine's address space")
            })?;
            data.clear();
            // The peer's length is a claim, not a size to allocate up front: a garbled one
            // would abort the process. `data` grows by the segments actually received.
            data.reserve(len.min(config.segment_len(1)));
            len
        }
    };
    if let Some(next) = chain.next() {
        transport
            .send(
                next,
                length_tag.encode(),
                (len as u64).to_le_bytes().to_vec(),
            )
            .map_err(|e| e.during(length_tag))?;
    }
    let whole = 0..len;
    let segment_len = config.segment_len(1);
    for k in 0..segment_count(&whole, segment_len) {
        let tag = Tag::new(CollectivePhase::BroadcastData, 0, k);
        let range = segment(&whole, segment_len, k);
        let payload = match chain.prev() {
            None => data[range].to_vec(),
            Some(prev) => {
                let payload = transport
                    .recv(prev, tag.encode())
                    .map_err(|e| e.during(tag))?;
                if payload.len() != range.len() {
                    let message = format!(
                        "sent {} bytes where {} were expected",
                        payload.len(),
                        range.len()
                    );
                    return Err(CollectiveFault::peer(prev, message).during(tag));
                }
                data.extend_from_slice(&payload);
                payload
            }
        };
        if let Some(next) = chain.next() {
            transport
                .send(next, tag.encode(), payload)
                .map_err(|e| e.during(tag))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::distribute::testing::{on_threads, SplitMix};
    use crate::distribute::InMemoryTransport;

    fn cluster(n: usize) -> Vec<InMemoryTransport> {
        InMemoryTransport::cluster_with_timeout(n, Duration::from_secs(5))
    }

    #[test]
    fn the_chain_starts_at_the_root_and_visits_every_rank_once() {
        let n = 4;
        let chains: Vec<_> = (0..n)
            .map(|r| BroadcastChain::new(r, n, 2).unwrap())
            .collect();
        assert_eq!(chains[2].prev(), None);
        assert_eq!(chains[2].next(), Some(3));
        assert_eq!(chains[1].position(), 3);
        assert_eq!(chains[1].next(), None);
        assert_eq!(chains[0].prev(), Some(3));
        assert!(BroadcastChain::new(0, 1, 0).unwrap().next().is_none());
        assert!(BroadcastChain::new(0, 2, 2).is_err());
    }

    #[test]
    fn every_rank_gets_the_roots_bytes() {
        for n in 1..=4 {
            for root in 0..n {
                for len in [0, 1, 63, 64, 65, 1000] {
                    let payload = SplitMix(len as u64).bytes(len);
                    let out = on_threads(cluster(n), |t| {
                        let mut data = if t.rank() == root {
                            payload.clone()
                        } else {
                            vec![0xAA; t.rank() * 3]
                        };
                        let config = CollectiveConfig::with_segment_bytes(64);
                        broadcast_with(t, root, &mut data, &config).unwrap();
                        data
                    });
                    for (r, data) in out.iter().enumerate() {
                        assert_eq!(data, &payload, "n={n} root={root} len={len} rank={r}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_default_config_broadcasts_from_a_non_zero_root() {
        let payload = SplitMix(9).bytes(3000);
        let out = on_threads(cluster(3), |t| {
            let mut data = if t.rank() == 1 {
                payload.clone()
            } else {
                vec![]
            };
            broadcast(t, 1, &mut data).unwrap();
            data
        });
        assert!(out.iter().all(|d| d == &payload));
    }

    #[test]
    fn a_length_header_beyond_memory_is_an_error_not_an_abort() {
        let mut ranks = InMemoryTransport::cluster_with_timeout(2, Duration::from_millis(200));
        let mut receiver = ranks.pop().unwrap();
        let mut root = ranks.pop().unwrap();
        let length_tag = Tag::new(CollectivePhase::BroadcastLength, 0, 0).encode();
        root.send(1, length_tag, u64::MAX.to_le_bytes().to_vec())
            .unwrap();
        let err = broadcast(&mut receiver, 0, &mut vec![]).unwrap_err();
        assert_eq!(err.rank(), Some(0), "{err}");
    }

    #[test]
    fn a_root_outside_the_world_is_refused() {
        let out = on_threads(cluster(2), |t| broadcast(t, 2, &mut vec![]).unwrap_err());
        assert!(matches!(out[0], CollectiveFault::Invalid(_)));
    }
}
