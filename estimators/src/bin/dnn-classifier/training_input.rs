//! What this task's training input reads: its share of the training files under the
//! auto-shard policy, interleaved as the flags say, and how many rows it read from each.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Result;
use estimator::datasets::{
    AutoShardPolicy, BoxDataset, DatasetExt, Error, Example, InputFiles, Schema, WorkerShare,
};

use crate::input_format::{InputFormat, Interleaving};

/// This task's training files and the rows read from each.
pub struct TrainingInput {
    share: WorkerShare,
    interleaving: Interleaving,
    /// Rows read so far from each file of the share, in its order.
    rows_read: Arc<[AtomicU64]>,
    /// Every training file (what the statistics pass reads).
    all: usize,
}

impl TrainingInput {
    /// The share of training replica `rank` of `replicas` of `files` under `policy`.
    pub fn new(
        files: &InputFiles,
        policy: AutoShardPolicy,
        replicas: usize,
        rank: usize,
        interleaving: Interleaving,
    ) -> Result<Self> {
        let share = files.for_worker(policy, replicas, rank)?;
        let rows_read = (0..share.files.len()).map(|_| AtomicU64::new(0)).collect();
        Ok(TrainingInput {
            share,
            interleaving,
            rows_read,
            all: files.len(),
        })
    }

    /// Says which files this task trains on, and how.
    pub fn log_plan(&self, replicas: usize, rank: usize) {
        let names: Vec<String> = (self.share.files.paths().iter())
            .map(|p| p.display().to_string())
            .collect();
        let rows = match self.share.rows {
            (1, _) => String::from("every row"),
            (n, i) => format!("one row in {n}, from row {i}"),
        };
        tracing::info!(
            "training input: {} of {} file(s) under auto-shard policy {} (replica {rank} of \
             {replicas}), {rows}, {} file(s) at a time: {}",
            names.len(),
            self.all,
            self.share.policy,
            self.interleaving.cycle_length,
            names.join(", ")
        );
    }

    /// This task's training rows, laid out as `schema`: its files, read as the interleaving
    /// says, and under `DATA` its rows of them. Always behind a `shard` stage, so that the
    /// pipeline's position has one shape whatever the policy.
    pub fn rows(
        &self,
        format: &InputFormat,
        schema: &Schema,
    ) -> Result<BoxDataset<Example>, Error> {
        let files = &self.share.files;
        // One training file read alone keeps the position checkpoints held before lists of
        // files; a share of several files names its files in the position, so that a
        // position of other files is refused (a checkpoint written before tasks shared
        // their positions holds only the chief's) rather than read in this task's files.
        let rows = if self.all == 1 {
            counted(&self.rows_read, 0, format.file_rows(files.first(), schema)?)
        } else {
            let (format, schema, paths) = (format.clone(), schema.clone(), files.paths().to_vec());
            let rows_read = self.rows_read.clone();
            let Interleaving {
                cycle_length,
                block_length,
            } = self.interleaving;
            files
                .read(cycle_length, block_length, move |path| {
                    let index = paths.iter().position(|p| p == path).unwrap_or_default();
                    Ok(counted(&rows_read, index, format.file_rows(path, &schema)?))
                })
                .boxed()
        };
        let (num_shards, index) = self.share.rows;
        Ok(rows.shard(num_shards, index).boxed())
    }

    /// Logs how many rows the training input read from each of this task's files; nothing
    /// when it read none (the statistics pass's rows stood for them).
    pub fn log_rows_read(&self) {
        if self
            .rows_read
            .iter()
            .all(|r| r.load(Ordering::Relaxed) == 0)
        {
            return;
        }
        for (path, rows) in self.share.files.paths().iter().zip(self.rows_read.iter()) {
            tracing::info!(
                "training input read {} rows of {}",
                rows.load(Ordering::Relaxed),
                path.display()
            );
        }
    }
}

/// `rows`, each counted in `rows_read[index]` as it is read.
fn counted(
    rows_read: &Arc<[AtomicU64]>,
    index: usize,
    rows: BoxDataset<Example>,
) -> BoxDataset<Example> {
    let rows_read = rows_read.clone();
    rows.map(move |example| {
        rows_read[index].fetch_add(1, Ordering::Relaxed);
        example
    })
    .boxed()
}
