//! The checkpoint manager: atomic saves, the index, retention, and crash-tolerant `latest`.
//!
//! Source of truth and crash safety:
//! * a save writes `ckpt-{step}.ckpt` atomically first, then the index, then deletes what
//!   retention says, so the index never names a file the manager deleted;
//! * the index is the source of truth for the order and the retained set, but a directory scan
//!   adds any valid-looking `ckpt-*.ckpt` file *newer* (higher step) than the index's latest that
//!   the index does not list: a crash between writing the file and the index loses nothing, and
//!   the next save adopts such files into the index (and so into retention);
//! * files older than the index's latest that it does not list (left when a crash hit between
//!   the index write and the deletions) are ignored, except as a last resort in [`latest`];
//! * a missing or corrupt index is rebuilt from a scan of `ckpt-*.ckpt`, ordered by step.
//!
//! [`latest`]: CheckpointManager::latest

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use super::file::Checkpoint;
use super::index::CheckpointIndex;
use super::naming::{checkpoint_file_name, checkpoint_path, parse_checkpoint_file_name};
use super::retention::{prune, Retention};
use crate::error::{Error, Result};
use crate::io::write_atomic;

/// Saves, lists, loads and prunes the checkpoints of one `model_dir`.
///
/// Clones share their pins and serialise their saves, so a trainer and an in-process evaluator
/// can each hold one. Only one process should save into a `model_dir` at a time (the chief).
#[derive(Debug, Clone)]
pub struct CheckpointManager {
    model_dir: PathBuf,
    retention: Retention,
    /// When this manager was made: where keeping a checkpoint every n hours starts counting
    /// when the index has no checkpoint kept so yet.
    created: f64,
    /// Pinned checkpoint file names, with how many times each is pinned.
    pins: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Serialises the read-modify-write of the index between saves of this process.
    save_lock: Arc<Mutex<()>>,
}

impl CheckpointManager {
    /// A manager for `model_dir` keeping the newest `keep_max` checkpoints (`None`/`0`: all).
    pub fn new(model_dir: impl Into<PathBuf>, keep_max: Option<usize>) -> Self {
        CheckpointManager {
            model_dir: model_dir.into(),
            retention: Retention {
                keep_max,
                keep_every_secs: None,
            },
            created: unix_seconds(SystemTime::now()),
            pins: Arc::default(),
            save_lock: Arc::default(),
        }
    }

    /// The directory holding the checkpoints and the index.
    pub fn model_dir(&self) -> &Path {
        &self.model_dir
    }

    /// Also keeps for good, of the checkpoints retention would delete, one whenever `hours`
    /// have passed since the last one kept so (TF's `keep_checkpoint_every_n_hours`; `None`:
    /// none, as are 0 and less). Those leave the index and stay in `model_dir`.
    pub fn with_keep_checkpoint_every_n_hours(mut self, hours: Option<f64>) -> Self {
        let hours = hours.filter(|h| *h > 0.0 && h.is_finite());
        self.retention.keep_every_secs = hours.map(|h| h * 3600.0);
        self
    }

    /// How many checkpoints are kept (`None`/`Some(0)`: all).
    pub fn keep_max(&self) -> Option<usize> {
        self.retention.keep_max
    }

    /// Writes `ckpt` atomically as `ckpt-{step}.ckpt` (replacing one of the same step), then
    /// updates the index, then deletes what retention says; returns the checkpoint's path.
    pub fn save(&self, ckpt: &Checkpoint) -> Result<PathBuf> {
        let _guard = lock(&self.save_lock);
        let name = checkpoint_file_name(ckpt.global_step);
        let path = self.model_dir.join(&name);
        write_atomic(&path, &ckpt.encode())?;

        let mut index = self.effective_index()?;
        index.record(&name, unix_seconds(SystemTime::now()));
        let last_preserved = index.last_preserved_timestamp.unwrap_or(self.created);
        let pinned = self.pinned_names();
        let pruning = prune(
            &index.all,
            &index.timestamps,
            self.retention,
            &pinned,
            last_preserved,
        );
        for name in pruning.delete.iter().chain(&pruning.preserve) {
            index.remove(name);
        }
        if !pruning.preserve.is_empty() {
            index.last_preserved_timestamp = Some(pruning.last_preserved);
        }
        index.write(&self.model_dir)?;

        for name in &pruning.preserve {
            tracing::info!("keeping checkpoint {name} for good (keep_checkpoint_every_n_hours)");
        }
        for name in pruning.delete {
            let old = self.model_dir.join(&name);
            match std::fs::remove_file(&old) {
                Ok(()) => tracing::debug!("deleted old checkpoint {}", old.display()),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("could not delete old checkpoint {}: {e}", old.display()),
            }
        }
        Ok(path)
    }

    /// The newest readable checkpoint, or `None` when `model_dir` holds none.
    ///
    /// Tries the newest first (see the module docs for how the index and the scan combine);
    /// a missing, truncated or corrupt one is skipped with a warning naming it. Errors if
    /// checkpoints exist but none of them can be read, rather than silently starting over.
    pub fn latest(&self) -> Result<Option<(PathBuf, Checkpoint)>> {
        let index = self.effective_index()?;
        let listed: BTreeSet<&str> = index.all.iter().map(String::as_str).collect();
        let stale = self.scan()?;
        let candidates = index.all.iter().rev().cloned().chain(
            stale
                .into_iter()
                .rev()
                .map(|(_, n)| n)
                .filter(|n| !listed.contains(n.as_str())),
        );

        let mut failures = Vec::new();
        for name in candidates {
            let path = self.model_dir.join(&name);
            match self.load(&path) {
                Ok(ckpt) => return Ok(Some((path, ckpt))),
                Err(e) => {
                    tracing::warn!("skipping unreadable checkpoint: {e}; trying the previous one");
                    failures.push(e.to_string());
                }
            }
        }
        if failures.is_empty() {
            return Ok(None);
        }
        Err(Error::checkpoint(
            &self.model_dir,
            format!(
                "none of its {} checkpoints can be read (move them and the index file '{}' \
                 away to start afresh): {}",
                failures.len(),
                super::index::INDEX_FILE_NAME,
                failures.join("; ")
            ),
        ))
    }

    /// Reads and verifies the checkpoint file at `path`.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let ckpt = Checkpoint::decode(path, &bytes)?;
        let named_step = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_checkpoint_file_name);
        match named_step {
            Some(step) if step != ckpt.global_step => Err(Error::checkpoint(
                path,
                format!(
                    "file name says step {step} but its header says {}",
                    ckpt.global_step
                ),
            )),
            _ => Ok(ckpt),
        }
    }

    /// Reads and verifies the checkpoint of `global_step` in `model_dir`.
    pub fn load_step(&self, global_step: u64) -> Result<Checkpoint> {
        self.load(checkpoint_path(&self.model_dir, global_step))
    }

    /// The retained checkpoints, oldest save first (the latest is last).
    pub fn list(&self) -> Result<Vec<PathBuf>> {
        let index = self.effective_index()?;
        Ok(index
            .all
            .iter()
            .map(|name| self.model_dir.join(name))
            .collect())
    }

    /// The step of the newest checkpoint, without opening any checkpoint file (for watchers).
    ///
    /// Reads the index and lists the directory only, so the file may still turn out corrupt:
    /// [`latest`](Self::latest) then falls back to an older step.
    pub fn latest_step(&self) -> Result<Option<u64>> {
        Ok(self.effective_index()?.latest_step())
    }

    /// Protects the checkpoint `path` (matched by file name) from retention until unpinned.
    ///
    /// Pins nest: a checkpoint pinned twice needs two [`unpin`](Self::unpin)s. Pins live in
    /// memory, shared by clones of this manager; other processes do not see them.
    pub fn pin(&self, path: impl AsRef<Path>) {
        if let Some(name) = file_name(path.as_ref()) {
            *lock(&self.pins).entry(name).or_insert(0) += 1;
        }
    }

    /// Releases one pin of `path`; returns false if it was not pinned.
    ///
    /// The checkpoint is deleted at the next save if retention no longer keeps it.
    pub fn unpin(&self, path: impl AsRef<Path>) -> bool {
        let Some(name) = file_name(path.as_ref()) else {
            return false;
        };
        let mut pins = lock(&self.pins);
        match pins.get_mut(&name) {
            Some(1) => {
                pins.remove(&name);
                true
            }
            Some(count) => {
                *count -= 1;
                true
            }
            None => false,
        }
    }

    fn pinned_names(&self) -> BTreeSet<String> {
        lock(&self.pins).keys().cloned().collect()
    }

    /// The canonical checkpoint files in `model_dir` as `(step, name)`, by step ascending.
    fn scan(&self) -> Result<Vec<(u64, String)>> {
        let dir = &self.model_dir;
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name();
            if let Some(step) = name.to_str().and_then(parse_checkpoint_file_name) {
                found.push((step, name.to_string_lossy().into_owned()));
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    /// The index as the manager sees it: the index file plus newer unlisted files, or, when
    /// the index is missing or corrupt, every checkpoint file by step.
    fn effective_index(&self) -> Result<CheckpointIndex> {
        let files = self.scan()?;
        let (mut index, newer_than) = match CheckpointIndex::read(&self.model_dir) {
            Ok(Some(index)) => {
                let latest = index.latest_step();
                (index, latest)
            }
            Ok(None) => (CheckpointIndex::default(), None),
            Err(e) => {
                tracing::warn!("{e}; rebuilding it from the checkpoint files in the directory");
                (CheckpointIndex::default(), None)
            }
        };
        for (step, name) in files {
            if newer_than.is_some_and(|latest| step <= latest) || index.all.contains(&name) {
                continue;
            }
            let modified = std::fs::metadata(self.model_dir.join(&name))
                .and_then(|m| m.modified())
                .map_or(0.0, unix_seconds);
            index.record(&name, modified);
        }
        Ok(index)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn unix_seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests;
