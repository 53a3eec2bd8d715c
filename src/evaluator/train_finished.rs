//! The marker the chief of `train_and_evaluate` leaves in `model_dir` when training ends:
//! an input that ends before `max_steps` would otherwise leave the evaluator waiting for a
//! checkpoint that never comes.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::write_json_atomic;

/// The marker's file name in `model_dir`.
pub const TRAIN_FINISHED_FILE: &str = "train_finished.json";

/// `model_dir/train_finished.json`: training toward `max_steps` ended at `global_step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainFinished {
    /// The global step of the final checkpoint.
    pub global_step: u64,
    /// The `max_steps` training was run with (an evaluator heeds only its own run's marker).
    pub max_steps: u64,
}

impl TrainFinished {
    /// The marker's path in `model_dir`.
    pub fn path(model_dir: &Path) -> PathBuf {
        model_dir.join(TRAIN_FINISHED_FILE)
    }

    /// Writes the marker atomically.
    pub fn write(&self, model_dir: &Path) -> Result<()> {
        write_json_atomic(&Self::path(model_dir), self)
    }

    /// The marker, or `None` when there is none; an unparsable one is an error naming it.
    pub fn read(model_dir: &Path) -> Result<Option<Self>> {
        let path = Self::path(model_dir);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::json(path, e))
    }

    /// Removes the marker (done when training starts); no marker is fine.
    pub fn remove(model_dir: &Path) -> Result<()> {
        let path = Self::path(model_dir);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_reads_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(TrainFinished::read(dir.path()).unwrap(), None);
        let marker = TrainFinished {
            global_step: 7,
            max_steps: 10,
        };
        marker.write(dir.path()).unwrap();
        assert_eq!(TrainFinished::read(dir.path()).unwrap(), Some(marker));
        TrainFinished::remove(dir.path()).unwrap();
        TrainFinished::remove(dir.path()).unwrap();
        assert_eq!(TrainFinished::read(dir.path()).unwrap(), None);
        std::fs::write(TrainFinished::path(dir.path()), b"{\"global_").unwrap();
        let err = TrainFinished::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains(TRAIN_FINISHED_FILE), "{err}");
    }
}
