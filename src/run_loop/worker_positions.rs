//! Where each replica's own input stood. A checkpoint's `input_position` is the chief's,
//! but under FILE sharding a worker reads other files and under DATA other rows, so that
//! position is no place in a worker's input: each worker needs its own back, as TF saves
//! every worker's iterator (`tf.train.Checkpoint(iterator=…)`).
//!
//! Synchronous replicas (MultiWorkerMirrored) take exactly one batch each per global step.
//! They share their positions as training starts and every so many steps, and the chief's
//! checkpoints hold the last shared ones; a worker resuming from a checkpoint at step `s`
//! restores its position shared at step `a ≤ s` and reads on `s - a` batches — exactly
//! where it stood. Parameter-server workers share no checkpoint with the chief and their
//! global steps are everyone's: each records its own latest position in
//! `model_dir/input_positions/replica-<rank>.json` on the checkpoint schedule (TF's
//! `CheckpointInputPipelineHook` writes one input checkpoint per worker) and reads on from
//! it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use datasets::{Dataset, Position};
use serde::{Deserialize, Serialize};

use super::step_sync::{Restored, StepSync};
use crate::checkpoint::{contents, Checkpoint, CheckpointEvery, CheckpointSchedule};
use crate::distribute::CollectiveFault;
use crate::error::{Error, Result};
use crate::estimator::RunConfig;
use crate::io::write_json_atomic;

/// The checkpoint metadata key of the replicas' shared positions.
pub const SHARED_KEY: &str = "replica_input_positions";

/// The folder of the model directory holding parameter-server workers' position files.
pub const POSITIONS_DIR: &str = "input_positions";

/// Most steps between shares, whatever the checkpoint schedule: a resume reads on fewer
/// than this many batches, and a share costs one broadcast per replica.
const SHARE_EVERY_STEPS: u64 = 100;

/// Every replica's input position at one global step (the chief's checkpoints hold it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SharedPositions {
    global_step: u64,
    /// Indexed by rank.
    positions: Vec<Position>,
}

impl SharedPositions {
    /// None shared yet at `global_step`.
    pub fn new(global_step: u64) -> Self {
        SharedPositions {
            global_step,
            positions: Vec::new(),
        }
    }

    /// `position` as one replica sends it.
    pub fn encode(position: &Position) -> Vec<u8> {
        serde_json::to_vec(position).unwrap_or_default()
    }

    /// Adds the next rank's position, as [`encode`](Self::encode) made it.
    pub fn push(&mut self, bytes: &[u8]) -> Result<()> {
        let rank = self.positions.len();
        let position = serde_json::from_slice(bytes).map_err(|e| {
            CollectiveFault::invalid(format!("replica {rank} shared no input position: {e}"))
        })?;
        self.positions.push(position);
        Ok(())
    }

    /// Writes these positions into `checkpoint`'s metadata.
    pub fn put(&self, checkpoint: &mut Checkpoint) {
        if let (Some(meta), Ok(value)) =
            (checkpoint.meta.as_object_mut(), serde_json::to_value(self))
        {
            meta.insert(SHARED_KEY.into(), value);
        }
    }

    /// Replica `rank`'s position in `checkpoint` and the step it was shared at, when the
    /// checkpoint holds the positions of `replicas` replicas (of another cluster's, no
    /// rank's are its own).
    pub fn own(checkpoint: &Checkpoint, rank: usize, replicas: usize) -> Option<(u64, Position)> {
        let value = checkpoint.meta.get(SHARED_KEY)?;
        let shared = match SharedPositions::deserialize(value) {
            Ok(shared) => shared,
            Err(e) => {
                tracing::warn!("unreadable {SHARED_KEY} in the checkpoint: {e}");
                return None;
            }
        };
        if shared.positions.len() != replicas {
            tracing::warn!(
                "the checkpoint holds the input positions of {} replicas, this cluster has \
                 {replicas}",
                shared.positions.len()
            );
            return None;
        }
        let position = shared.positions.into_iter().nth(rank)?;
        Some((shared.global_step, position))
    }
}

/// One replica's part in keeping its input position: sharing it (synchronous replicas) or
/// recording it in its own file (a parameter-server worker).
pub(super) struct WorkerPositions {
    rank: usize,
    is_chief: bool,
    model_dir: PathBuf,
    every: CheckpointEvery,
    start_step: u64,
    /// A parameter-server worker's file, once training started.
    file: Option<PositionFile>,
}

impl WorkerPositions {
    /// Replica `rank`'s, under `config`.
    pub fn new(config: &RunConfig, rank: usize, is_chief: bool) -> Self {
        WorkerPositions {
            rank,
            is_chief,
            model_dir: config.model_dir.clone(),
            every: config.save_checkpoints,
            start_step: 0,
            file: None,
        }
    }

    /// Restores the input of a replica that `restored` brought to `step` (`None`: a
    /// parameter-server worker, which holds no checkpoint), shares where it starts, and
    /// returns the restored checkpoint's global step when training resumes from one.
    pub fn resume<B, M, D>(
        &mut self,
        sync: &mut dyn StepSync<B, M>,
        dataset: &mut D,
        restored: Option<Restored>,
        step: u64,
        resume_input: bool,
    ) -> Result<Option<u64>>
    where
        B: AutodiffBackend,
        D: Dataset,
    {
        let ps_worker = !self.is_chief && restored.is_none();
        let restored = restored.filter(|r| r.checkpoint.global_step > 0);
        if resume_input {
            match &restored {
                Some(r) => match sync.own_position(&r.checkpoint).filter(|_| !self.is_chief) {
                    Some((at, position)) => read_on(dataset, &position, step - at.min(step))?,
                    // The chief's own, or a checkpoint written before replicas shared theirs.
                    None => contents::restore_input(dataset, &r.checkpoint, &r.source),
                },
                None if ps_worker => {
                    let path = positions_path(&self.model_dir, self.rank);
                    restore_latest(dataset, &path);
                    self.file = Some(PositionFile::new(path, self.every, step));
                }
                None => {}
            }
        }
        self.start_step = step;
        sync.share_positions(step, dataset.position())?;
        if let Some(file) = &mut self.file {
            file.record(step, dataset.position());
        }
        let Some(restored) = restored else {
            return Ok(None);
        };
        let source = restored.source.display();
        tracing::info!("restored {source} (global_step {step})");
        Ok(Some(restored.checkpoint.global_step))
    }

    /// After every replica's step to `step`: shares the positions every 100 steps and, with
    /// checkpoints every N steps, at those steps, so that a resume from them reads nothing
    /// on.
    pub fn after_step<B: AutodiffBackend, M>(
        &mut self,
        sync: &mut dyn StepSync<B, M>,
        step: u64,
        now: Instant,
        position: &dyn Fn() -> Position,
    ) -> Result<()> {
        let since = step - self.start_step.min(step);
        let checkpoint_step =
            matches!(self.every, CheckpointEvery::Steps(n) if since.is_multiple_of(n.max(1)));
        if checkpoint_step || since.is_multiple_of(SHARE_EVERY_STEPS) {
            sync.share_positions(step, position())?;
        }
        if let Some(file) = self.file.as_mut().filter(|f| f.schedule.due(step, now)) {
            file.schedule.saved(step, now);
            file.record(step, position());
        }
        Ok(())
    }

    /// At the last step a parameter-server worker records where its input ended.
    pub fn finish(&mut self, step: u64, position: &dyn Fn() -> Position) {
        if let Some(file) = &mut self.file {
            file.record(step, position());
        }
    }
}

/// Restores `position` into `dataset` and reads on `batches` items; a position that does
/// not fit (the pipeline changed) starts the input from its beginning, as the chief's does.
fn read_on<D: Dataset>(dataset: &mut D, position: &Position, batches: u64) -> Result<()> {
    if let Err(e) = dataset.restore(position) {
        tracing::warn!(
            "this replica's own input position does not fit its input pipeline ({e}); \
             reading the input from its beginning"
        );
        return Ok(());
    }
    for _ in 0..batches {
        match dataset.next_item() {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e.into()),
            None => break,
        }
    }
    tracing::info!("restored this replica's own input position, {batches} batch(es) read on");
    Ok(())
}

/// A parameter-server worker's latest recorded position, in its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Recorded {
    global_step: u64,
    position: Position,
}

/// Where a parameter-server worker records its position, and when.
struct PositionFile {
    path: PathBuf,
    schedule: CheckpointSchedule,
    warned: bool,
}

impl PositionFile {
    fn new(path: PathBuf, every: CheckpointEvery, step: u64) -> Self {
        let schedule = CheckpointSchedule::new(every, step, Instant::now());
        PositionFile {
            path,
            schedule,
            warned: false,
        }
    }

    fn record(&mut self, global_step: u64, position: Position) {
        let recorded = Recorded {
            global_step,
            position,
        };
        if let Err(e) = write_json_atomic(&self.path, &recorded) {
            if !std::mem::replace(&mut self.warned, true) {
                tracing::warn!("cannot record this worker's input position: {e}");
            }
        }
    }
}

/// The position file of replica `rank` in `model_dir`.
pub fn positions_path(model_dir: &Path, rank: usize) -> PathBuf {
    let name = format!("replica-{rank}.json");
    model_dir.join(POSITIONS_DIR).join(name)
}

/// Restores the position recorded at `path`, if any; a position that does not fit starts
/// the input from its beginning, with a warning.
fn restore_latest<D: Dataset>(dataset: &mut D, path: &Path) {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => return tracing::warn!("{}", Error::io(path, e)),
    };
    let restored = serde_json::from_slice::<Recorded>(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|r| dataset.restore(&r.position).map_err(|e| e.to_string()));
    match restored {
        Ok(()) => tracing::info!("restored this worker's input from {}", path.display()),
        Err(reason) => tracing::warn!(
            "{}: input position does not fit this input pipeline ({reason}); reading the \
             input from its beginning",
            path.display()
        ),
    }
}

#[cfg(test)]
#[path = "worker_positions_tests.rs"]
mod tests;
