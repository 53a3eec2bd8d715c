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
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    /// The directory, as given when the lock was taken.
    dir: PathBuf,
}

impl DirLock {
    /// Takes the lock of `dir` (created when missing) for `purpose` ("training"), or fails
    /// naming the process that holds it. Taking it again in the same process shares it.
    ///
    /// A directory removed before its lock is taken loses nothing of this run's: it is made
    /// again, a few times, before the removal is reported as [`Error::DirGone`] rather than
    /// as whichever step of taking the lock it cut short.
    pub fn acquire(dir: &Path, purpose: &str) -> Result<Self> {
        for _ in 0..ACQUIRE_ATTEMPTS {
            match Self::take(dir, purpose) {
                Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {}
                taken => return taken,
            }
        }
        Err(Error::DirGone {
            dir: dir.to_path_buf(),
        })
    }

    fn take(dir: &Path, purpose: &str) -> Result<Self> {
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
        // Reading its owner would wait for ever on a FIFO, and a device is no lock.
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            let why = "is not a regular file: remove it, and the next run makes its own";
            return Err(Error::io(&path, std::io::Error::other(why)));
        }
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
        let shared = Arc::new(Held {
            file,
            dir: dir.to_path_buf(),
        });
        held.retain(|_, lock| lock.strong_count() > 0);
        held.insert(key, Arc::downgrade(&shared));
        Ok(Self { _held: shared })
    }
}

impl DirLock {
    /// Fails when the directory was removed (or replaced) since the lock was taken: what
    /// this run writes next would be lost with it, or land in a directory it did not lock.
    pub fn ensure_present(&self) -> Result<()> {
        let held = &self._held;
        let path = held.dir.join(LOCK_FILE);
        let same = match (std::fs::metadata(&path), held.file.metadata()) {
            (Ok(now), Ok(taken)) => now.dev() == taken.dev() && now.ino() == taken.ino(),
            _ => false,
        };
        if same {
            Ok(())
        } else {
            Err(Error::DirGone {
                dir: held.dir.clone(),
            })
        }
    }

    /// What to report of `error`, which a write into the directory failed with: the
    /// directory's removal where that is the cause.
    ///
    /// A removal in progress fails a write before it reaches the lock file (`rm -r` takes
    /// entries in the directory's order), with whatever the operation it cut short says: a
    /// file that vanished (`ENOENT`), a link into a directory already unlinked (`EPERM`). So
    /// for an I/O error the removal is given a moment to show before the error is reported
    /// as it is (the write failed either way: the run ends a moment later at most).
    pub fn explain_write_failure(&self, error: Error) -> Error {
        let grace = match &error {
            Error::Io { .. } => REMOVAL_GRACE,
            _ => Duration::ZERO,
        };
        let deadline = Instant::now() + grace;
        loop {
            if let Err(gone) = self.ensure_present() {
                return gone;
            }
            if Instant::now() >= deadline {
                return error;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// How many times taking a lock makes its directory again after a removal.
const ACQUIRE_ATTEMPTS: usize = 3;

/// How long a failed write waits for the lock file to go too.
const REMOVAL_GRACE: Duration = Duration::from_secs(1);

impl Drop for Held {
    /// Clears the owner before the lock goes with the file: a lock file that still names
    /// one was left by a run that died.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

const UNKNOWN_OWNER: &str = "another run";

/// Removes the temporary files of atomic writes (`.<name>.tmp-<pid>`) and the directories
/// of exports (`.tmp-<stamp>-<pid>`) that a killed run left in `dir`, saying so.
fn remove_interrupted_writes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let removed = if kind.is_file() && is_interrupted_write(&name) {
            std::fs::remove_file(entry.path())
        } else if kind.is_dir() && is_interrupted_export(&name) {
            std::fs::remove_dir_all(entry.path())
        } else {
            continue;
        };
        match removed {
            Ok(()) => tracing::warn!(
                "removed {}, left by a write that was cut short",
                entry.path().display()
            ),
            Err(e) => tracing::warn!("cannot remove {}: {e}", entry.path().display()),
        }
    }
}

/// Whether `name` is the directory an export is written in before its rename
/// (`.tmp-<stamp>-<pid>`).
fn is_interrupted_export(name: &str) -> bool {
    name.strip_prefix(".tmp-")
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(stamp, pid)| all_digits(stamp) && all_digits(pid))
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `name` is the temporary file of an atomic write as earlier versions named it
/// (`.<name>.tmp-<pid>-<n>` or `.<name>.tmp-<pid>`); today's have no name until committed.
fn is_interrupted_write(name: &str) -> bool {
    name.starts_with('.')
        && name.rsplit_once(".tmp-").is_some_and(|(_, rest)| {
            let (pid, n) = rest.split_once('-').unwrap_or((rest, "0"));
            all_digits(pid) && all_digits(n)
        })
}

/// Who holds the lock, as its file says.
fn owner_of(file: &mut File) -> String {
    // Its first line, bounded: the file is anyone's to fill, and it goes into a message.
    let mut bytes = Vec::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.take(MAX_OWNER_BYTES).read_to_end(&mut bytes));
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().next().unwrap_or_default().trim();
    match read {
        Ok(_) if !line.is_empty() => line.replace(char::is_control, "?"),
        _ => UNKNOWN_OWNER.to_string(),
    }
}

/// The most of a lock file read for its owner: the line this crate writes fits in it.
const MAX_OWNER_BYTES: u64 = 512;

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
mod tests;
