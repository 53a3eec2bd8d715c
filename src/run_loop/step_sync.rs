//! The seam between the one training loop and the distribution strategy: what a replica
//! does besides computing its gradients — where its state comes from, how a step's
//! gradients become an update, how it leaves and ends.
//!
//! One implementation per strategy: [`OneDevice`] (nothing to exchange), [`RingSync`]
//! (Mirrored and MultiWorkerMirrored: gradients averaged by ring all-reduce over any
//! transport) and [`PsSync`] (parameter servers: pull values, push gradients).

mod one_device;
mod parameter_servers;
mod ring;
mod running_statistics;

use std::path::PathBuf;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::termination::{self, Termination};
use super::train_state::TrainState;
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::distribute::ps::{MinSizePartitioner, PsMode, PsReplica};
use crate::distribute::{CommStats, GradientAverager, LocalStep, Replica};
use crate::error::Result;
use crate::summary::SummaryWriter;

pub(crate) use one_device::OneDevice;
pub(crate) use parameter_servers::PsSync;
pub(crate) use ring::RingSync;

/// Whom one replica trains with, connected: what picks its [`StepSync`].
pub(crate) enum Peers {
    /// Nobody: one process, one replica.
    Alone,
    /// Synchronous replicas averaging gradients over a ring (Mirrored, MultiWorkerMirrored).
    Ring(Replica),
    /// Parameter servers holding the variables, large ones cut into blocks as the
    /// partitioner says.
    ParameterServers(PsReplica, PsMode, Option<MinSizePartitioner>),
}

impl Peers {
    /// Replicas whose gradients each update averages: the ring's size, the gradients a
    /// synchronous ps update aggregates, 1 otherwise.
    pub(crate) fn sync_replicas(&self) -> usize {
        match self {
            Peers::Alone => 1,
            Peers::Ring(replica) => replica.world_size(),
            Peers::ParameterServers(replica, mode, _) => {
                mode.replicas_to_aggregate(replica.world_size()).max(1)
            }
        }
    }
}

/// The [`StepSync`] of a replica training with `peers`; `manager` is the chief's
/// checkpoint directory, and `averager`'s timeline (if any) records the exchanges too.
pub(crate) fn step_sync<B, M>(
    peers: Peers,
    manager: CheckpointManager,
    averager: GradientAverager,
) -> Box<dyn StepSync<B, M>>
where
    B: AutodiffBackend,
    M: Module<B>,
{
    match peers {
        Peers::Alone => Box::new(OneDevice::new(manager)),
        Peers::Ring(replica) => Box::new(RingSync::new(replica, manager, averager)),
        Peers::ParameterServers(replica, mode, partitioner) => {
            let timeline = averager.timeline().cloned();
            Box::new(PsSync::new(replica, mode, partitioner, manager).with_timeline(timeline))
        }
    }
}

/// The state a replica starts from, and the checkpoint it came from (when there was one).
pub(crate) type Started<B, M> = (TrainState<B, M>, Option<Restored>);

/// `state` restored from the latest checkpoint in `manager`'s directory, when there is one.
fn restore_latest<B: AutodiffBackend, M: Module<B>>(
    manager: &CheckpointManager,
    state: TrainState<B, M>,
) -> Result<Started<B, M>> {
    let Some((source, checkpoint)) = manager.latest()? else {
        return Ok((state, None));
    };
    let state = state.restore(&checkpoint, &source)?;
    Ok((state, Some(Restored { source, checkpoint })))
}

/// A checkpoint training resumed from.
pub(crate) struct Restored {
    /// Where it came from: a file, or the chief's broadcast.
    pub source: PathBuf,
    pub checkpoint: Checkpoint,
}

/// Whether a replica computes this step, and with which step's randomness.
pub(crate) enum Ready {
    /// Compute the gradients of the next batch, seeded for this global step.
    Compute { seed_step: u64 },
    /// Training ends here for this replica.
    Stop,
}

/// What became of a step's local gradients.
pub(crate) enum Synced {
    /// Apply these gradients here (averaged over the replicas, or this replica's own): the
    /// global step advances by one.
    Apply(LocalStep),
    /// The update was applied elsewhere (a parameter server); the state's global step is
    /// the one after it.
    Applied { loss: f64 },
    /// Nothing was applied (a stale gradient); go on with the next batch.
    Skipped,
    /// Every replica stops here.
    Stop,
}

/// What a strategy does around the one training step. Methods that may replace the model
/// take the state by value and give it back (see [`TrainState`]).
pub(crate) trait StepSync<B, M>
where
    B: AutodiffBackend,
{
    /// Whether this replica writes checkpoints, summaries and exports.
    fn is_chief(&self) -> bool;

    /// This replica's rank; its randomness derives from it.
    fn rank(&self) -> usize;

    /// Brings a freshly built state to where training starts — the latest checkpoint, the
    /// chief's state, the parameter servers initialised — training to `last_step` (a
    /// function of the global step training resumes from).
    fn prepare(
        &mut self,
        state: TrainState<B, M>,
        last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<B, M>>;

    /// Before a step: whether to compute it, given whether this replica has a batch.
    fn ready(
        &mut self,
        state: TrainState<B, M>,
        has_batch: bool,
    ) -> Result<(TrainState<B, M>, Ready)>;

    /// Turns this replica's gradients (`None`: no batch) into what to do with the step.
    fn exchange(
        &mut self,
        state: TrainState<B, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)>;

    /// After a step: whether training stops there because a task was asked to terminate.
    /// This process's own signal, where nobody waits for this replica's gradients;
    /// replicas in step override it with what they agreed on in the step's exchange.
    fn termination(&self) -> Option<Termination> {
        termination::received().map(Termination::Alone)
    }

    /// Stops before the others would (a hook's request), so that they stop with it instead
    /// of waiting for it. Nothing to do where nobody waits for this replica's gradients.
    fn leave(&mut self, _state: &TrainState<B, M>) -> Result<()> {
        Ok(())
    }

    /// The training state as a checkpoint, with the input at `position`: this replica's
    /// own, unless the variables live elsewhere.
    fn snapshot(
        &mut self,
        state: TrainState<B, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)>
    where
        M: Module<B>,
    {
        let checkpoint = state.snapshot(position)?;
        Ok((state, checkpoint))
    }

    /// Records where every replica's input stands at `step`, so that the chief's
    /// checkpoints give each replica its own position back. Nothing to do where the chief's
    /// checkpoints are not every replica's (one device, parameter servers).
    fn share_positions(&mut self, _step: u64, _position: Position) -> Result<()> {
        Ok(())
    }

    /// This replica's own input position in `checkpoint` and the global step it was
    /// shared at, where the strategy shares them.
    fn own_position(&self, _checkpoint: &Checkpoint) -> Option<(u64, Position)> {
        None
    }

    /// Chief: what has to happen before the final checkpoint (updates still under way on
    /// the parameter servers are applied); whether that checkpoint must be written even if
    /// the last step already has one.
    fn before_final_checkpoint(&mut self) -> Result<bool> {
        Ok(false)
    }

    /// After training: ends the job on the peers and checks that the replicas agree; the
    /// CRC-32C of the final weights.
    fn finish(&mut self, state: &TrainState<B, M>) -> Result<u32>;

    /// Training failed: lets the peers stop waiting for this replica, as far as they can
    /// be told (the others notice a failed ring replica by its silence or its closed
    /// connection).
    fn abandon(&mut self) {}

    /// Chief: the strategy's own summaries (all-reduce volume, parameter-server rates).
    fn write_summaries(&mut self, _writer: &mut SummaryWriter, _step: u64) {}

    /// What averaging gradients cost over the whole run, for strategies that do.
    fn comm_totals(&mut self) -> Option<CommStats> {
        None
    }
}
