//! Every rank's small value on every rank: what the ranks tell each other once, at start.

use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::Result;
use crate::distribute::Transport;

/// Every rank's `mine`, by rank, on every rank. Each rank sends its value to each other one
/// (sends are buffered, so all send before any waits): n − 1 messages a rank, for values
/// exchanged once, not for gradients.
pub fn all_gather<T: Transport + ?Sized>(transport: &mut T, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
    let (rank, world_size) = (transport.rank(), transport.world_size());
    let tag = Tag::new(CollectivePhase::Gather, 0, 0);
    for peer in (0..world_size).filter(|&peer| peer != rank) {
        transport
            .send(peer, tag.encode(), mine.to_vec())
            .map_err(|e| e.during(tag))?;
    }
    (0..world_size)
        .map(|peer| match peer == rank {
            true => Ok(mine.to_vec()),
            false => transport
                .recv(peer, tag.encode())
                .map_err(|e| e.during(tag)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribute::InMemoryTransport;

    #[test]
    fn every_rank_learns_every_value_in_rank_order() {
        let handles: Vec<_> = InMemoryTransport::cluster(4)
            .into_iter()
            .map(|mut transport| {
                std::thread::spawn(move || {
                    let mine = vec![transport.rank() as u8; transport.rank() + 1];
                    all_gather(&mut transport, &mine).unwrap()
                })
            })
            .collect();
        let want: Vec<Vec<u8>> = (0..4u8).map(|r| vec![r; r as usize + 1]).collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), want);
        }
    }
}
