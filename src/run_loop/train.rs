//! Training entry: the strategy's replicas, each on its device with its optimizer, each
//! running the one loop.

use datasets::{Dataset, DatasetExt};

use super::input::ReplicaInput;
use super::step_sync::Peers;
use super::training_replica::{train_replica, InProcess};
use crate::checkpoint::CheckpointListener;
use crate::distribute::Strategy;
use crate::error::Result;
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};

/// Trains `estimator` on `dataset` with `strategy`, calling `listener` after every
/// checkpoint the chief saves.
pub(crate) fn train<E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    dataset: D,
    spec: TrainSpec,
    strategy: Strategy,
    listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    crate::host_heap::keep_freed_memory();
    let (mode, partitioner) = {
        let config = estimator.run_config();
        (config.ps_mode, config.variable_partitioner)
    };
    let sharded = |dataset: D, world: usize, rank: usize| {
        if spec.auto_shard {
            ReplicaInput::Sharded(dataset.shard(world, rank))
        } else {
            ReplicaInput::Whole(dataset)
        }
    };
    let (input, peers) = match strategy {
        Strategy::OneDevice => (ReplicaInput::Whole(dataset), Peers::Alone),
        Strategy::Mirrored { replicas } => {
            return super::mirrored::train(estimator, dataset, spec, replicas, listener)
        }
        Strategy::MultiWorkerMirrored(replica) => (
            sharded(dataset, replica.world_size(), replica.rank()),
            Peers::Ring(replica),
        ),
        Strategy::ParameterServer(replica) => (
            sharded(dataset, replica.world_size(), replica.rank()),
            Peers::ParameterServers(replica, mode, partitioner),
        ),
    };
    let alone = InProcess {
        rank: 0,
        replicas: 1,
    };
    train_replica(estimator, input, spec, peers, alone, listener)
}
