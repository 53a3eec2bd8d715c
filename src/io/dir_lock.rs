//! An advisory lock on a directory that one run writes: a second run that would write the
//! same model directory is refused, naming the run that holds it, instead of both
//! overwriting each other's checkpoints and configuration.
//!
//! The lock is the operating system's (`flock` through `File::try_lock`), so it dies with
//! its process: a run killed on this host leaves nothing to clean up, and the next one takes
//! the directory over, saying whose it was, and removes the temporary files that a write
//! cut short left (no other writer can own them while the lock is held). Within one process
//! the lock is shared (a program that takes it before writing its configuration, then
//! trains, holds it once).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// The lock file, in the directory it guards.
pub const LOCK_FILE: &str = ".estimator.lock";

/// The locks this process holds, by directory, so that taking one twice shares it.
static HELD: Mutex<BTreeMap<PathBuf, Weak<Held>>> = Mutex::new(BTreeMap::new());

/// The lock on one directory, held until the last handle to it is dropped.
#[derive(Debug, Clone)]
pub struct DirLock {
    _held: Arc<Held>,
}

#[derive(Debug)]
struct Held {
    file: File,
}

impl DirLock {
    /// Takes the lock of `dir` (created when missing) for `purpose` ("training"), or fails
    /// naming the process that holds it. Taking it again in the same process shares it.
    pub fn acquire(dir: &Path, purpose: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let key = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(Self { _held: shared });
        }
        let path = key.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::DirInUse {
                    dir: dir.to_path_buf(),
                    owner: owner_of(&mut file),
                })
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        let previous = owner_of(&mut file);
        if previous != UNKNOWN_OWNER {
            tracing::warn!(
                "{}: taking over the lock left by {previous}, which ended without releasing it",
                dir.display()
            );
        }
        write_owner(&mut file, purpose).map_err(|e| Error::io(&path, e))?;
        remove_interrupted_writes(&key);
        let shared = Arc::new(Held { file });
        held.retain(|_, lock| lock.strong_count() > 0);
        held.insert(key, Arc::downgrade(&shared));
        Ok(Self { _held: shared })
    }
}

impl Drop for Held {
    /// Clears the owner before the lock goes with the file: a lock file that still names
    /// one was left by a run that died.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

const UNKNOWN_OWNER: &str = "another run";

/// Removes the temporary files of atomic writes (`.<name>.tmp-<pid>`) that a killed run
/// left in `dir`, saying so.
fn remove_interrupted_writes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_interrupted_write(&name) && entry.file_type().is_ok_and(|t| t.is_file()) {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => tracing::warn!(
                    "removed {}, left by a write that was cut short",
                    entry.path().display()
                ),
                Err(e) => tracing::warn!("cannot remove {}: {e}", entry.path().display()),
            }
        }
    }
}

/// Whether `name` is the temporary file of an atomic write (`write_atomic`).
fn is_interrupted_write(name: &str) -> bool {
    name.starts_with('.')
        && name
            .rsplit_once(".tmp-")
            .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Who holds the lock, as its file says.
fn owner_of(file: &mut File) -> String {
    let mut text = String::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text));
    match read {
        Ok(_) if !text.trim().is_empty() => text.trim().to_string(),
        _ => UNKNOWN_OWNER.to_string(),
    }
}

/// Writes this process as the lock's owner.
fn write_owner(file: &mut File, purpose: &str) -> std::io::Result<()> {
    let host = crate::cluster::hostname();
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    let pid = std::process::id();
    writeln!(
        file,
        "pid {pid} on {host} ({purpose}, since unix time {since})"
    )?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock file opened and locked by hand, as another process would hold it.
    fn held_elsewhere(dir: &Path, owner: &str) -> File {
        std::fs::create_dir_all(dir).unwrap();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.join(LOCK_FILE))
            .unwrap();
        file.try_lock().unwrap();
        write!(file, "{owner}").unwrap();
        file
    }

    #[test]
    fn a_directory_held_elsewhere_is_refused_naming_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let model_dir = dir.path().join("model");
        let other = held_elsewhere(&model_dir, "pid 4242 on trainer-7 (training, since 1)");
        let err = DirLock::acquire(&model_dir, "training")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("in use by pid 4242 on trainer-7 (training, since 1)"),
            "{err}"
        );
        assert!(err.starts_with(&model_dir.display().to_string()), "{err}");
        drop(other);
        // Released (the other process ended or died): this run takes it over.
        let lock = DirLock::acquire(&model_dir, "training").unwrap();
        let owner = std::fs::read_to_string(model_dir.join(LOCK_FILE)).unwrap();
        assert!(
            owner.starts_with(&format!("pid {} on ", std::process::id())),
            "{owner}"
        );
        drop(lock);
    }

    #[test]
    fn taking_the_lock_removes_what_interrupted_writes_left_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let left = [
            ".ckpt-300.ckpt.tmp-4242",
            ".checkpoint.tmp-7",
            ".run_config.json.tmp-1",
        ];
        let kept = [
            "ckpt-300.ckpt",
            "checkpoint",
            ".hidden",
            ".x.tmp-",
            ".y.tmp-12a",
        ];
        for name in left.iter().chain(&kept) {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join(".tmp-5-6")).unwrap();
        let _lock = DirLock::acquire(dir.path(), "training").unwrap();
        for name in left {
            assert!(!dir.path().join(name).exists(), "{name} left behind");
        }
        for name in kept {
            assert!(dir.path().join(name).exists(), "{name} removed");
        }
        assert!(
            dir.path().join(".tmp-5-6").is_dir(),
            "directories are not touched"
        );
    }

    #[test]
    fn a_held_lock_keeps_others_out_is_shared_in_process_and_cleared_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), "training").unwrap();
        let second = DirLock::acquire(dir.path(), "export").unwrap();
        let raw = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(raw.try_lock(), Err(TryLockError::WouldBlock)));
        drop(first);
        assert!(
            matches!(raw.try_lock(), Err(TryLockError::WouldBlock)),
            "still shared"
        );
        drop(second);
        raw.try_lock().expect("released with the last handle");
        raw.unlock().unwrap();
        let owner = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(owner, "", "a released lock names no owner");
    }
}
