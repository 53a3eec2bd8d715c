//! The ring's order: the tasks of one machine next to each other.
//!
//! The ring all-reduce sends from each position to the next. In rank order, a cluster that
//! lists its tasks with machines interleaved (Kubernetes places pods where it likes, so
//! `worker:0` and `worker:2` may share a node while `worker:1` is elsewhere) crosses between
//! machines at almost every hop, and each machine's link carries several of the ring's
//! streams at once. Grouped by machine, as NCCL builds its rings from the topology, the ring
//! leaves each machine once and enters it once: every link carries one stream each way,
//! however the tasks are listed.

use super::collective::all_gather;
use super::collective_fault::Result;
use super::replica_seat::RingLayout;
use super::{Replica, Transport};

/// The ring's order for tasks on the machines `hosts` (by rank), as positions → ranks: the
/// machines in the order of their first task, the tasks of each in rank order (so rank 0
/// stays first, and a cluster listed machine by machine keeps rank order).
pub fn ring_order_by_host(hosts: &[String]) -> Vec<usize> {
    let mut machines: Vec<&String> = Vec::new();
    for host in hosts {
        if !machines.contains(&host) {
            machines.push(host);
        }
    }
    machines
        .into_iter()
        .flat_map(|machine| (0..hosts.len()).filter(move |&rank| &hosts[rank] == machine))
        .collect()
}

/// The ring's layout for the cluster `transport` connects, whose tasks `names` names: each
/// task's machine ([`host_id`](crate::cluster::host_id)) gathered from all, the order
/// logged when it is not rank order; hierarchical when `hierarchical` asks for it and every
/// machine of two or more has as many tasks, two or more.
pub(crate) fn ring_layout_of_cluster<T: Transport + ?Sized>(
    transport: &mut T,
    names: &[String],
    hierarchical: bool,
) -> crate::error::Result<RingLayout> {
    let host_id = crate::cluster::host_id();
    let (order, machines) =
        gather_ring_order(transport, &host_id).map_err(|e| Replica::naming(names, e))?;
    let chief = transport.rank() == 0;
    if chief && order.iter().enumerate().any(|(p, &r)| p != r) {
        let tasks: Vec<&str> = order
            .iter()
            .map(|&r| names.get(r).map_or("?", String::as_str))
            .collect();
        tracing::info!(
            "the all-reduce's ring visits {} machines one after another: {}",
            machines.len(),
            tasks.join(" → ")
        );
    }
    let k = machines.first().copied().unwrap_or(0);
    let uniform = machines.len() >= 2 && k >= 2 && machines.iter().all(|&m| m == k);
    let machine_size = if hierarchical && uniform { k } else { 0 };
    if chief && hierarchical {
        match machine_size {
            0 => tracing::warn!(
                "no hierarchical all-reduce: it needs two machines or more with as many tasks \
                 each, two or more (tasks per machine: {machines:?})"
            ),
            k => tracing::info!(
                "hierarchical all-reduce over {} machines of {k} tasks",
                machines.len()
            ),
        }
    }
    Ok(RingLayout {
        order,
        machine_size,
    })
}

/// Every rank's machine (`host_id` on this one), gathered from all ranks: the ring's order
/// grouped by machine, and each machine's number of ranks in that order.
fn gather_ring_order<T: Transport + ?Sized>(
    transport: &mut T,
    host_id: &str,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let hosts: Vec<String> = all_gather(transport, host_id.as_bytes())?
        .into_iter()
        .map(|id| String::from_utf8_lossy(&id).into_owned())
        .collect();
    let order = ring_order_by_host(&hosts);
    let mut machines: Vec<usize> = Vec::new();
    for (position, &rank) in order.iter().enumerate() {
        match position > 0 && hosts[order[position - 1]] == hosts[rank] {
            true => *machines.last_mut().expect("a machine before") += 1,
            false => machines.push(1),
        }
    }
    Ok((order, machines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribute::testing::Recording;
    use crate::distribute::transport::Renumbered;
    use crate::distribute::{all_reduce_sum_with, CollectiveConfig, InMemoryTransport};

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn machines_come_in_the_order_of_their_first_task_each_in_rank_order() {
        assert_eq!(
            ring_order_by_host(&hosts(&["a", "b", "a", "b"])),
            [0, 2, 1, 3]
        );
        assert_eq!(
            ring_order_by_host(&hosts(&["b", "c", "a", "c", "b", "a"])),
            [0, 4, 1, 3, 2, 5]
        );
        let listed_by_machine = hosts(&["a", "a", "b", "b"]);
        assert_eq!(ring_order_by_host(&listed_by_machine), [0, 1, 2, 3]);
        assert_eq!(ring_order_by_host(&hosts(&["a", "b", "c"])), [0, 1, 2]);
        assert!(ring_order_by_host(&[]).is_empty());
    }

    /// Sends of a 4-rank all-reduce, counted by (from, to) ranks, run over `order`.
    fn ring_sends(order: Vec<usize>) -> Vec<(usize, usize)> {
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let handles: Vec<_> = InMemoryTransport::cluster(4)
            .into_iter()
            .map(|transport| {
                let (order, sent) = (order.clone(), sent.clone());
                std::thread::spawn(move || {
                    let mut transport = Recording {
                        inner: transport,
                        sent,
                    };
                    let mut values: Vec<f32> = (0..4000)
                        .map(|i| (i * (transport.rank() + 3)) as f32 * 0.001)
                        .collect();
                    let mut view = Renumbered::new(&mut transport, &order);
                    // The ring, in segments of 1 KiB (not halving and doubling).
                    let config =
                        CollectiveConfig::with_segment_bytes(1024).with_halving_doubling_bytes(0);
                    all_reduce_sum_with(&mut view, &mut values, &config).unwrap();
                    values
                })
            })
            .collect();
        let results: Vec<Vec<f32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results.iter().all(|r| r == &results[0]), "ranks differ");
        let want: Vec<f32> = (0..4000).map(|i| (i * 18) as f32 * 0.001).collect();
        for (got, want) in results[0].iter().zip(&want) {
            assert!(
                (got - want).abs() <= 1e-3 * want.abs().max(1.0),
                "{got} vs {want}"
            );
        }
        let sent = sent
            .lock()
            .unwrap()
            .iter()
            .map(|&(f, t, _)| (f, t))
            .collect();
        sent
    }

    #[test]
    fn grouped_by_machine_the_ring_crosses_between_machines_half_as_often() {
        // Ranks 0 and 2 on one machine, 1 and 3 on another.
        let machine = |rank: usize| rank % 2;
        let crossing = |sends: &[(usize, usize)]| {
            sends
                .iter()
                .filter(|(from, to)| machine(*from) != machine(*to))
                .count()
        };
        let in_rank_order = ring_sends(vec![0, 1, 2, 3]);
        let grouped = ring_sends(ring_order_by_host(&hosts(&["a", "b", "a", "b"])));
        assert_eq!(in_rank_order.len(), grouped.len(), "the same messages");
        assert_eq!(
            crossing(&in_rank_order),
            in_rank_order.len(),
            "every hop crosses"
        );
        assert_eq!(
            crossing(&grouped) * 2,
            grouped.len(),
            "two hops of four cross"
        );
    }

    #[test]
    fn every_rank_gathers_the_same_order_and_tasks_per_machine() {
        let handles: Vec<_> = InMemoryTransport::cluster(4)
            .into_iter()
            .map(|mut transport| {
                std::thread::spawn(move || {
                    let host = ["x", "y", "x", "y"][transport.rank()];
                    gather_ring_order(&mut transport, host).unwrap()
                })
            })
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), (vec![0, 2, 1, 3], vec![2, 2]));
        }
    }
}
