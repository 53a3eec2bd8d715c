//! Barrier: no rank leaves before every rank has arrived (dissemination algorithm).

use super::partition::check_rank;
use super::{CollectivePhase, Tag};
use crate::distribute::collective_fault::Result;
use crate::distribute::Transport;

/// (rank sent to, rank received from) in each round of the dissemination barrier: in round
/// `k` rank `r` signals `r + 2^k` and waits for `r - 2^k` (mod `world_size`), so after
/// ⌈log2 `world_size`⌉ rounds every rank has heard, directly or not, from every other.
pub fn dissemination_rounds(rank: usize, world_size: usize) -> Vec<(usize, usize)> {
    let mut rounds = Vec::new();
    let mut distance = 1;
    while distance < world_size {
        rounds.push((
            (rank + distance) % world_size,
            (rank + world_size - distance) % world_size,
        ));
        distance *= 2;
    }
    rounds
}

/// Returns once every rank has called `barrier`.
pub fn barrier<T: Transport + ?Sized>(transport: &mut T) -> Result<()> {
    let (rank, world_size) = (transport.rank(), transport.world_size());
    check_rank("rank", rank, world_size)?;
    for (round, (to, from)) in dissemination_rounds(rank, world_size)
        .into_iter()
        .enumerate()
    {
        let tag = Tag::new(CollectivePhase::Barrier, round, 0);
        transport
            .send(to, tag.encode(), Vec::new())
            .map_err(|e| e.during(tag))?;
        transport
            .recv(from, tag.encode())
            .map_err(|e| e.during(tag))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::distribute::testing::on_threads;
    use crate::distribute::InMemoryTransport;

    #[test]
    fn rounds_reach_every_rank() {
        assert!(dissemination_rounds(0, 1).is_empty());
        assert_eq!(dissemination_rounds(0, 2), vec![(1, 1)]);
        assert_eq!(dissemination_rounds(1, 5), vec![(2, 0), (3, 4), (0, 2)]);
        // Who has (transitively) heard from whom after all rounds: everyone from everyone.
        for n in 1..=9 {
            let mut heard: Vec<Vec<bool>> =
                (0..n).map(|r| (0..n).map(|s| s == r).collect()).collect();
            for k in 0..dissemination_rounds(0, n).len() {
                let before = heard.clone();
                for (r, row) in heard.iter_mut().enumerate() {
                    let from = dissemination_rounds(r, n)[k].1;
                    row.iter_mut().zip(&before[from]).for_each(|(h, f)| *h |= f);
                }
            }
            assert!(heard.iter().flatten().all(|&h| h), "n={n}");
        }
    }

    #[test]
    fn nobody_leaves_before_the_last_arrives() {
        for n in 1..=5 {
            let ranks = InMemoryTransport::cluster_with_timeout(n, Duration::from_secs(5));
            let times = on_threads(ranks, |t| {
                let mut times = Vec::new();
                for round in 0..3u64 {
                    std::thread::sleep(Duration::from_millis(
                        (t.rank() as u64 * 7 + round * 3) % 20,
                    ));
                    let arrived = Instant::now();
                    barrier(t).unwrap();
                    times.push((arrived, Instant::now()));
                }
                times
            });
            for round in 0..3 {
                let last_arrival = times.iter().map(|t| t[round].0).max().unwrap();
                let first_exit = times.iter().map(|t| t[round].1).min().unwrap();
                assert!(first_exit >= last_arrival, "n={n} round={round}");
            }
        }
    }
}
