//! What a replica of synchronous data-parallel training does besides computing: take the
//! chief's state at start, average every step's gradients, leave in step with the others.

use std::path::Path;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;

use crate::checkpoint::Checkpoint;
use crate::distribute::{
    broadcast, CommStats, DistributeError, GradientAverager, LocalStep, Replica,
    DEFAULT_BUCKET_BYTES,
};
use crate::error::{Error, Result};

/// One replica's link to the others.
#[derive(Debug)]
pub struct ReplicaSync {
    replica: Replica,
    averager: GradientAverager,
}

impl ReplicaSync {
    /// Synchronises over `replica`, with fusion buckets of the default size.
    pub fn new(replica: Replica) -> Self {
        Self {
            replica,
            averager: GradientAverager::new(DEFAULT_BUCKET_BYTES),
        }
    }

    /// Whether this replica writes checkpoints, summaries and exports.
    pub fn is_chief(&self) -> bool {
        self.replica.is_chief()
    }

    /// This replica's rank.
    pub fn rank(&self) -> usize {
        self.replica.rank()
    }

    /// Number of replicas.
    pub fn world_size(&self) -> usize {
        self.replica.world_size()
    }

    /// The chief's training state, on every replica: the chief offers its latest
    /// checkpoint or its freshly initialised model and broadcasts it, so that all replicas
    /// start identical whatever their own initialisation did. Others offer `None`.
    pub fn share_state(&mut self, offer: Option<Checkpoint>) -> Result<Checkpoint> {
        let mut bytes = offer.map(|c| c.encode()).unwrap_or_default();
        broadcast(self.replica.transport(), 0, &mut bytes).map_err(|e| self.replica.error(e))?;
        let from = format!("training state broadcast by {}", self.replica.name(0));
        Checkpoint::decode(Path::new(&from), &bytes)
    }

    /// This step's gradients and loss averaged over the replicas, or `None` when some
    /// replica had no batch (or is leaving): then no replica takes the step.
    pub fn step<B: AutodiffBackend, M: Module<B>>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
    ) -> Result<Option<LocalStep>> {
        self.averager
            .average(model, local, self.replica.transport())
            .map_err(|e| self.replica.error(e))
    }

    /// Takes part in the next step without a batch, so that the others stop with this
    /// replica instead of waiting for it.
    pub fn leave<B: AutodiffBackend, M: Module<B>>(&mut self, model: &M) -> Result<()> {
        self.step(model, None).map(drop)
    }

    /// Compares this replica's weight digest with the chief's (broadcast); the replica
    /// whose weights differ fails, naming itself and the chief.
    pub fn check_same_as_chief(&mut self, crc: u32) -> Result<()> {
        let mut chief = crc.to_le_bytes().to_vec();
        broadcast(self.replica.transport(), 0, &mut chief).map_err(|e| self.replica.error(e))?;
        let chief = u32::from_le_bytes(chief.as_slice().try_into().unwrap_or_default());
        if chief == crc {
            return Ok(());
        }
        Err(Error::Distribute(DistributeError::invalid(format!(
            "the weights of {} differ from {}'s after training (crc32c {crc:08x} vs \
             {chief:08x}): something in the model is not deterministic across replicas",
            self.replica.name(self.rank()),
            self.replica.name(0),
        ))))
    }

    /// All-reduce counters since the last call.
    pub fn take_stats(&mut self) -> CommStats {
        self.averager.take_stats()
    }
}
