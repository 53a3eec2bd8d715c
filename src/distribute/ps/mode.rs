//! How parameter servers apply the gradients training tasks push.

use serde::{Deserialize, Serialize};

/// Asynchronous (TF's between-graph default) or synchronous (TF's `SyncReplicasOptimizer`)
/// updates, set in [`RunConfig::ps_mode`](crate::RunConfig).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum PsMode {
    /// Every push is applied on arrival; each applied push is one global step.
    Async {
        /// Pushes computed from values more than this many steps old are dropped (and
        /// counted in `ps/dropped`); none by default.
        #[serde(default)]
        max_staleness: Option<u64>,
    },
    /// The ps averages `replicas_to_aggregate` gradients of the current step and applies
    /// them once; gradients arriving later for that step (backup workers) are dropped.
    Sync {
        /// Gradients per update; all training tasks when unset.
        #[serde(default)]
        replicas_to_aggregate: Option<usize>,
    },
}

impl Default for PsMode {
    fn default() -> Self {
        PsMode::Async {
            max_staleness: None,
        }
    }
}

impl PsMode {
    /// Synchronous updates of all training tasks' gradients.
    pub fn sync() -> Self {
        PsMode::Sync {
            replicas_to_aggregate: None,
        }
    }

    /// The wire form: 0 for asynchronous, else the gradients per update (with `workers`
    /// training tasks).
    pub fn replicas_to_aggregate(self, workers: usize) -> usize {
        match self {
            PsMode::Async { .. } => 0,
            PsMode::Sync {
                replicas_to_aggregate,
            } => replicas_to_aggregate
                .unwrap_or(workers)
                .clamp(1, workers.max(1)),
        }
    }

    /// The staleness bound of asynchronous updates.
    pub fn max_staleness(self) -> Option<u64> {
        match self {
            PsMode::Async { max_staleness } => max_staleness,
            PsMode::Sync { .. } => None,
        }
    }
}
