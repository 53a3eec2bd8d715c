//! Pinning a checkpoint while it is evaluated: the chief's retention (`keep_checkpoint_max`)
//! may delete the original at any moment, and another process's deletion cannot be held
//! off, so the evaluator reads its own link to the file instead.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::AtomicFile;

/// The directory of an eval directory holding the pinned checkpoints.
pub(crate) const PINNED_DIR: &str = ".pinned";

/// A checkpoint file linked (or copied) into `eval_dir/.pinned/`; the pin is removed when
/// this value is dropped.
#[derive(Debug)]
pub struct PinnedCheckpoint {
    path: PathBuf,
}

impl PinnedCheckpoint {
    /// Pins `checkpoint` as `eval_dir/.pinned/<its file name>`: a hard link, whose contents
    /// stay readable after the original is deleted, or a copy on a file system without hard
    /// links. `Ok(None)` when the checkpoint is gone already.
    pub fn pin(checkpoint: &Path, eval_dir: &Path) -> Result<Option<Self>> {
        let name = checkpoint.file_name().ok_or_else(|| {
            Error::checkpoint(checkpoint, "a checkpoint path must end in a file name")
        })?;
        let dir = eval_dir.join(PINNED_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(name);
        // A pin left by an evaluator that died mid-evaluation.
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        match std::fs::hard_link(checkpoint, &path) {
            Ok(()) => return Ok(Some(Self { path })),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => tracing::debug!(
                "cannot hard-link {} ({e}); copying it instead",
                checkpoint.display()
            ),
        }
        // Copied whole or not at all, so a pin is always a whole checkpoint.
        let mut source = match std::fs::File::open(checkpoint) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(checkpoint, e)),
        };
        let mut copy = AtomicFile::create(&path)?;
        std::io::copy(&mut source, &mut copy).map_err(|e| Error::io(checkpoint, e))?;
        copy.commit()?;
        Ok(Some(Self { path }))
    }

    /// The pinned file, to read the checkpoint from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PinnedCheckpoint {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != ErrorKind::NotFound {
                tracing::warn!("could not remove pin {}: {e}", self.path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_outlives_the_original_and_is_removed_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("ckpt-5.ckpt");
        std::fs::write(&original, b"checkpoint bytes").unwrap();
        let eval_dir = dir.path().join("eval");
        let pin = PinnedCheckpoint::pin(&original, &eval_dir)
            .unwrap()
            .unwrap();
        assert_eq!(pin.path(), eval_dir.join(".pinned/ckpt-5.ckpt"));
        std::fs::remove_file(&original).unwrap();
        assert_eq!(std::fs::read(pin.path()).unwrap(), b"checkpoint bytes");
        let path = pin.path().to_path_buf();
        drop(pin);
        assert!(!path.exists());
    }

    #[test]
    fn a_vanished_checkpoint_pins_nothing_and_a_stale_pin_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("ckpt-7.ckpt");
        assert!(PinnedCheckpoint::pin(&original, dir.path())
            .unwrap()
            .is_none());
        std::fs::write(dir.path().join(".pinned/ckpt-7.ckpt"), b"stale").unwrap();
        std::fs::write(&original, b"fresh").unwrap();
        let pin = PinnedCheckpoint::pin(&original, dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::read(pin.path()).unwrap(), b"fresh");
    }
}
