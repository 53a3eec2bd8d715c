//! Retention policy: which checkpoints a save deletes, and which it keeps for good. Pure, no
//! file access.

use std::collections::BTreeSet;

/// How many checkpoints a model directory keeps, as TF's `keep_checkpoint_max` and
/// `keep_checkpoint_every_n_hours`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Retention {
    /// Keep the newest this many; `None` or `Some(0)` keeps everything.
    pub keep_max: Option<usize>,
    /// Of the checkpoints falling out of the newest `keep_max`, keep for good one whenever
    /// at least this many seconds have passed since the last one kept so (`None`: never).
    pub keep_every_secs: Option<f64>,
}

/// What a save does to the checkpoints before it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pruning {
    /// The checkpoints to delete, oldest first.
    pub delete: Vec<String>,
    /// The checkpoints to keep for good, oldest first: out of the index, never deleted.
    pub preserve: Vec<String>,
    /// When the newest checkpoint kept for good was saved (the one given when none is).
    pub last_preserved: f64,
}

/// What to do with `retained` (oldest first, each saved at the same index of `timestamps`).
///
/// Beyond the newest `keep_max`, each entry is deleted unless it was saved at least
/// `keep_every_secs` after `last_preserved` (then it is preserved, and the next one must be
/// as far after it), as TF's `CheckpointManager` does. A `pinned` entry (one an evaluator is
/// reading) is neither: it stays retained past its turn, on top of the `keep_max` newest,
/// until a later call finds it unpinned.
pub fn prune(
    retained: &[String],
    timestamps: &[f64],
    retention: Retention,
    pinned: &BTreeSet<String>,
    mut last_preserved: f64,
) -> Pruning {
    let keep = match retention.keep_max {
        None | Some(0) => retained.len(),
        Some(keep) => keep,
    };
    let excess = retained.len().saturating_sub(keep);
    let (mut delete, mut preserve) = (Vec::new(), Vec::new());
    for (i, name) in retained[..excess].iter().enumerate() {
        if pinned.contains(name) {
            continue;
        }
        let saved = timestamps.get(i).copied().unwrap_or(f64::NEG_INFINITY);
        match retention.keep_every_secs {
            Some(every) if saved - every >= last_preserved => {
                last_preserved = saved;
                preserve.push(name.clone());
            }
            _ => delete.push(name.clone()),
        }
    }
    Pruning {
        delete,
        preserve,
        last_preserved,
    }
}

#[cfg(test)]
mod tests;
