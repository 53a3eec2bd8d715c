//! What a task of a cluster trains on and reports: its share of the rows, and how many
//! batches one global step stands for.

use anyhow::{bail, Result};
use estimator::cluster::ClusterConfig;
use estimator::distribute::ps::PsMode;

use crate::cli::TrainArgs;
use crate::commands::ps_mode;

/// This task's share of the training rows: (number of training replicas, this replica's
/// rank); (1, 0) outside a cluster.
pub(crate) fn input_share(cluster: &ClusterConfig) -> Result<(usize, usize)> {
    match cluster {
        ClusterConfig::Local => Ok((1, 0)),
        ClusterConfig::Distributed { cluster, task } => match cluster.global_rank(*task) {
            Some(rank) => Ok((cluster.training_tasks().len(), rank)),
            None => bail!(
                "TF_CONFIG.task.type = {}: dnn-classifier trains with chief and worker tasks \
                 only",
                task.kind
            ),
        },
    }
}

/// Batches one global step trains on: one per replica when replicas average gradients, one
/// per push when ps tasks apply pushes asynchronously, `replicas_to_aggregate` when they
/// average them.
pub(crate) fn batches_per_step(
    cluster: &ClusterConfig,
    args: &TrainArgs,
    replicas: usize,
) -> usize {
    let with_ps =
        matches!(cluster, ClusterConfig::Distributed { cluster, .. } if !cluster.ps.is_empty());
    match ps_mode(args) {
        _ if !with_ps => replicas,
        PsMode::Async { .. } => 1,
        PsMode::Sync {
            replicas_to_aggregate,
        } => replicas_to_aggregate.unwrap_or(replicas).clamp(1, replicas),
    }
}

/// Whether the cluster has an evaluator task.
pub(crate) fn cluster_has_evaluator(cluster: &ClusterConfig) -> bool {
    matches!(cluster, ClusterConfig::Distributed { cluster, .. } if cluster.evaluator.is_some())
}
