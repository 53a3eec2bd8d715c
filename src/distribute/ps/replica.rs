//! A training task of a parameter-server cluster: its rank and its connections to the ps
//! tasks.

use super::{ParameterServers, PsClientConfig};
use crate::error::Result;

/// This process's seat among the training tasks of a parameter-server cluster (chief first,
/// rank 0), connected to every ps task.
#[derive(Debug)]
pub struct PsReplica {
    pub(crate) servers: Box<ParameterServers>,
    names: Vec<String>,
    rank: usize,
}

impl PsReplica {
    /// Training task `rank` of the tasks `names` (rank order, the chief first), talking to
    /// the ps tasks at `ps_addresses` (index = ps task index).
    pub fn connect(
        ps_addresses: &[String],
        rank: usize,
        names: Vec<String>,
        config: PsClientConfig,
    ) -> Result<Self> {
        let chief = names.first().cloned().unwrap_or_else(|| "chief:0".into());
        let servers = Box::new(ParameterServers::connect(
            ps_addresses,
            rank,
            &chief,
            config,
        )?);
        Ok(Self {
            servers,
            names,
            rank,
        })
    }

    /// This task's rank; 0 is the chief.
    pub fn rank(&self) -> usize {
        self.rank
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
