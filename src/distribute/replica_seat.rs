//! A synchronous replica's seat in its cluster: the transport to the other replicas and
//! every replica's task name, so that errors name the task at fault.

use super::{CollectiveFault, Renumbered, Transport};
use crate::error::Error;

/// This process's seat among synchronous replicas: the transport to the others and every
/// replica's name (for errors that say which task went missing).
pub struct Replica {
    transport: Box<dyn Transport>,
    names: Vec<String>,
    /// How the gradients' all-reduces go round the ranks.
    ring: RingLayout,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("rank", &self.rank())
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// A replica talking over `transport`; `names[r]` names rank `r` in errors (missing
    /// names read "rank r").
    pub fn new(transport: Box<dyn Transport>, names: Vec<String>) -> Self {
        Self {
            transport,
            names,
            ring: RingLayout::default(),
        }
    }

    /// This replica averaging gradients as `ring` says (the ring's order the same on every
    /// rank; see [`ring_order_by_host`](crate::distribute::ring_order_by_host)).
    pub(crate) fn with_ring_layout(mut self, ring: RingLayout) -> Self {
        self.ring = ring;
        self
    }

    /// Ranks per machine when large all-reduces go hierarchically (ranks numbered in the
    /// ring's order, machine by machine); 0: flat.
    pub fn machine_size(&self) -> usize {
        self.ring.machine_size
    }

    /// This replica's rank; rank 0 is the chief.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// Number of replicas.
    pub fn world_size(&self) -> usize {
        self.transport.world_size()
    }

    /// Whether this replica writes checkpoints, summaries and exports.
    pub fn is_chief(&self) -> bool {
        self.rank() == 0
    }

    /// The name of rank `rank`.
    pub fn name(&self, rank: usize) -> String {
        task_name(&self.names, rank)
    }

    /// The transport.
    pub fn transport(&mut self) -> &mut dyn Transport {
        self.transport.as_mut()
    }

    /// The transport with its ranks numbered in the ring's order, for the gradients'
    /// all-reduces (faults still name ranks as [`transport`](Self::transport) does).
    pub fn ring_transport(&mut self) -> Renumbered<'_, dyn Transport> {
        Renumbered::new(self.transport.as_mut(), &self.ring.order)
    }

    /// A collective's failure as a run error naming the task at fault.
    pub fn error(&self, error: CollectiveFault) -> Error {
        Self::naming(&self.names, error)
    }

    pub(super) fn naming(names: &[String], error: CollectiveFault) -> Error {
        match error {
            CollectiveFault::Peer { rank, message } => Error::PeerLost {
                task: task_name(names, rank),
                message,
            },
            CollectiveFault::Refused { rank, message } => {
                Error::Config(format!("{}: {message}", task_name(names, rank)))
            }
            other => Error::Distribute(other),
        }
    }
}

/// `names[rank]`, or "rank N" when the name is missing.
fn task_name(names: &[String], rank: usize) -> String {
    names
        .get(rank)
        .cloned()
        .unwrap_or_else(|| format!("rank {rank}"))
}

/// How the gradients' all-reduces go round a cluster: the ranks in the ring's order, and
/// the ranks per machine when they reduce hierarchically (0: flat).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RingLayout {
    /// Positions → ranks; empty: rank order.
    pub order: Vec<usize>,
    /// Ranks per machine for the hierarchical all-reduce; 0: flat.
    pub machine_size: usize,
}
