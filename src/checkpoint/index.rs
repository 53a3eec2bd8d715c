//! The index file `model_dir/checkpoint`: which checkpoints are retained, and the latest.
//!
//! Like TensorFlow's `checkpoint` text proto, but JSON:
//! `{"latest": "ckpt-300.ckpt", "all": ["ckpt-100.ckpt", ..], "timestamps": [1700000000.5, ..]}`.
//! `all` is in save order (oldest first), `latest` is its last entry, and `timestamps[i]` is
//! when `all[i]` was saved, in seconds since the Unix epoch. With
//! `keep_checkpoint_every_n_hours`, `last_preserved_timestamp` is when the newest checkpoint
//! kept for good was saved; such checkpoints leave the index and stay on disk, as in TF.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::index_fault::IndexFault;
use super::naming::parse_checkpoint_file_name;
use crate::error::{Error, Result};
use crate::io::write_json_atomic;

/// The index file's name inside `model_dir`.
pub const INDEX_FILE_NAME: &str = "checkpoint";

/// The contents of the index file `model_dir/checkpoint`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointIndex {
    /// File name of the most recently saved checkpoint (the last of `all`), `None` when empty.
    pub latest: Option<String>,
    /// File names of the retained checkpoints, oldest save first.
    pub all: Vec<String>,
    /// Save time of each entry of `all`, in seconds since the Unix epoch.
    pub timestamps: Vec<f64>,
    /// When the newest checkpoint kept for good (out of `all`, never deleted) was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_preserved_timestamp: Option<f64>,
}

impl CheckpointIndex {
    /// The path of the index file in `model_dir`.
    pub fn path(model_dir: &Path) -> PathBuf {
        model_dir.join(INDEX_FILE_NAME)
    }

    /// Reads the index of `model_dir`: `Ok(None)` if there is none, an error if it is corrupt.
    pub fn read(model_dir: &Path) -> Result<Option<CheckpointIndex>> {
        let path = Self::path(model_dir);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let fault = match serde_json::from_slice::<CheckpointIndex>(&bytes) {
            Ok(index) => match index.fault() {
                None => return Ok(Some(index)),
                Some(fault) => fault,
            },
            Err(e) => IndexFault::Json(e),
        };
        Err(Error::CheckpointIndex { path, fault })
    }

    /// Writes the index of `model_dir` atomically (readers see the old or the new one).
    pub fn write(&self, model_dir: &Path) -> Result<()> {
        write_json_atomic(&Self::path(model_dir), self)
    }

    /// The global step of `latest`.
    pub fn latest_step(&self) -> Option<u64> {
        self.latest.as_deref().and_then(parse_checkpoint_file_name)
    }

    /// Records `name` as just saved at `timestamp`: moved to the end if present, made latest.
    pub fn record(&mut self, name: &str, timestamp: f64) {
        self.remove(name);
        self.all.push(name.to_string());
        self.timestamps.push(timestamp);
        self.latest = Some(name.to_string());
    }

    /// Drops `name` from the index (`latest` follows the new last entry); false if absent.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(i) = self.all.iter().position(|n| n == name) else {
            return false;
        };
        self.all.remove(i);
        if i < self.timestamps.len() {
            self.timestamps.remove(i);
        }
        self.latest = self.all.last().cloned();
        true
    }

    /// The first invariant the manager relies on that this index breaks, if any.
    pub fn fault(&self) -> Option<IndexFault> {
        let mut seen = BTreeSet::new();
        for name in &self.all {
            if parse_checkpoint_file_name(name).is_none() {
                return Some(IndexFault::NotACheckpoint { name: name.clone() });
            }
            if !seen.insert(name) {
                return Some(IndexFault::ListedTwice { name: name.clone() });
            }
        }
        if self.timestamps.len() != self.all.len() {
            return Some(IndexFault::Timestamps {
                timestamps: self.timestamps.len(),
                checkpoints: self.all.len(),
            });
        }
        if self.latest.as_ref() != self.all.last() {
            return Some(IndexFault::LatestNotLast {
                latest: self.latest.clone(),
                last: self.all.last().cloned(),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(names: &[&str]) -> CheckpointIndex {
        let mut index = CheckpointIndex::default();
        for (i, name) in names.iter().enumerate() {
            index.record(name, 1000.0 + i as f64);
        }
        index
    }

    #[test]
    fn record_and_remove() {
        let mut idx = index(&["ckpt-100.ckpt", "ckpt-200.ckpt"]);
        assert_eq!(idx.latest.as_deref(), Some("ckpt-200.ckpt"));
        assert_eq!(idx.latest_step(), Some(200));
        idx.record("ckpt-100.ckpt", 5000.0);
        assert_eq!(idx.all, ["ckpt-200.ckpt", "ckpt-100.ckpt"]);
        assert_eq!(idx.timestamps, [1001.0, 5000.0]);
        assert_eq!(idx.latest_step(), Some(100));
        assert!(idx.remove("ckpt-100.ckpt"));
        assert!(!idx.remove("ckpt-100.ckpt"));
        assert_eq!(idx.latest.as_deref(), Some("ckpt-200.ckpt"));
        assert!(idx.remove("ckpt-200.ckpt"));
        assert_eq!(idx, CheckpointIndex::default());
        assert!(idx.fault().is_none());
    }

    #[test]
    fn write_read_round_trip_and_json_shape() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(CheckpointIndex::read(dir.path()).unwrap(), None);
        let idx = index(&["ckpt-100.ckpt", "ckpt-300.ckpt"]);
        idx.write(dir.path()).unwrap();
        assert_eq!(CheckpointIndex::read(dir.path()).unwrap(), Some(idx));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("checkpoint")).unwrap()).unwrap();
        assert_eq!(json["latest"], "ckpt-300.ckpt");
        assert_eq!(json["all"][0], "ckpt-100.ckpt");
        assert_eq!(json["timestamps"][1], 1001.0);
    }

    #[test]
    fn corrupt_index_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        for bad in [
            &b"{\"latest\": \"ckpt-1.ckpt\", \"all\": [\"ckpt-1.c"[..],
            b"",
            br#"{"latest": "ckpt-1.ckpt", "all": ["ckpt-1.ckpt"], "timestamps": []}"#,
            br#"{"latest": "ckpt-2.ckpt", "all": ["ckpt-1.ckpt"], "timestamps": [1.0]}"#,
            br#"{"latest": "../etc.ckpt", "all": ["../etc.ckpt"], "timestamps": [1.0]}"#,
            br#"{"latest": "ckpt-1.ckpt", "all": ["ckpt-1.ckpt", "ckpt-1.ckpt"],
                 "timestamps": [1.0, 2.0]}"#,
        ] {
            std::fs::write(&path, bad).unwrap();
            let err = CheckpointIndex::read(dir.path()).unwrap_err().to_string();
            assert!(err.contains("corrupt checkpoint index"), "{err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
    }
}
