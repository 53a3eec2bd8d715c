//! A training task of a parameter-server cluster: its rank and its client of the ps tasks.

use super::{InMemoryPs, ParameterServers, PsClient, PsClientConfig};
use crate::error::Result;

/// This process's seat among the training tasks of a parameter-server cluster (chief first,
/// rank 0), with a client of every ps task.
#[derive(Debug)]
pub struct PsReplica {
    pub(crate) servers: Box<dyn PsClient>,
    names: Vec<String>,
    rank: usize,
}

impl PsReplica {
    /// Training task `rank` of the tasks `names` (rank order, the chief first), calling the
    /// ps tasks through `servers`.
    pub(crate) fn new(servers: Box<dyn PsClient>, rank: usize, names: Vec<String>) -> Self {
        Self {
            servers,
            names,
            rank,
        }
    }

    /// Training task `rank` of the tasks `names` (rank order, the chief first), talking to
    /// the ps tasks at `ps_addresses` (index = ps task index) over gRPC.
    pub fn connect(
        ps_addresses: &[String],
        rank: usize,
        names: Vec<String>,
        config: PsClientConfig,
    ) -> Result<Self> {
        let chief = names.first().cloned().unwrap_or_else(|| "chief:0".into());
        let servers = ParameterServers::connect(ps_addresses, rank, &chief, config)?;
        Ok(Self::new(Box::new(servers), rank, names))
    }

    /// Training task `rank` of the tasks `names` (rank order, the chief first), calling the
    /// ps tasks `ps` of this process directly.
    pub fn in_memory(
        ps: &InMemoryPs,
        rank: usize,
        names: Vec<String>,
        config: PsClientConfig,
    ) -> Self {
        Self::new(Box::new(ps.client(rank, config)), rank, names)
    }

    /// This task's rank; 0 is the chief.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The task name of training task `rank` (`worker:1`), or "rank N".
    pub fn name(&self, rank: usize) -> String {
        self.names
            .get(rank)
            .cloned()
            .unwrap_or_else(|| format!("rank {rank}"))
    }

    /// The chief's task name.
    pub fn chief_name(&self) -> &str {
        self.names.first().map_or("chief:0", String::as_str)
    }

    /// Number of training tasks.
    pub fn world_size(&self) -> usize {
        self.names.len()
    }

    /// Whether this task initialises the ps tasks and writes checkpoints and summaries.
    pub fn is_chief(&self) -> bool {
        self.rank == 0
    }

    /// Number of ps tasks.
    pub fn num_ps(&self) -> usize {
        self.servers.len()
    }
}
