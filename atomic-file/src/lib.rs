//! Files replaced whole or not at all, for every crate of the workspace: a reader sees the
//! old file or the whole new one, and a crash at any point loses neither.
//!
//! The bytes go to a temp file in the target's directory, which [`AtomicFile::commit`]
//! syncs and renames over the target, then syncs the directory (`atomic-write-file` does
//! that part). On Linux the temp file has no name until the commit (`O_TMPFILE`), so a
//! process killed while writing leaves nothing behind; on a file system without unnamed
//! files it is `.<name>.<6 random characters>`.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use atomic_write_file::unix::OpenOptionsExt as _;
use atomic_write_file::AtomicWriteFile;

/// A file written in full or not at all, for output streamed as it is produced. Dropped
/// without a commit (the run failed half-way), it leaves the target as it was.
///
/// A symlink's target is what is replaced, the link kept. A FIFO, a device, or anything
/// under `/dev` or `/proc` (`/dev/stdout`) is written through directly instead, as a
/// rename would replace it.
pub struct AtomicFile {
    /// The file written: the path given, or the file its symlinks lead to.
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Replacing(AtomicWriteFile),
    Through(File),
}

impl AtomicFile {
    /// Starts replacing `path`, whose directory must exist. A new file gets the default
    /// mode; a replaced one keeps its own.
    pub fn create(path: &Path) -> io::Result<Self> {
        Self::open(path, false)
    }

    /// As [`AtomicFile::create`], for a secret (a private key): the file is readable and
    /// writable by its owner alone (0600) from its first byte, whatever the file replaced
    /// allowed.
    pub fn create_private(path: &Path) -> io::Result<Self> {
        Self::open(path, true)
    }

    fn open(path: &Path, private: bool) -> io::Result<Self> {
        let special = path.starts_with("/dev") || path.starts_with("/proc");
        let (path, replaced) = match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(io::Error::other("it is a directory, not a file"));
            }
            Ok(meta) if meta.is_file() && !special => (fs::canonicalize(path)?, true),
            Ok(_) => (path.to_path_buf(), false),
            Err(_) => (path.to_path_buf(), !special),
        };
        let sink = if replaced {
            let mut options = AtomicWriteFile::options();
            if private {
                options.mode(0o600).preserve_mode(false);
            }
            Sink::Replacing(options.open(&path)?)
        } else {
            let mut options = File::options();
            options.write(true).create(true).truncate(true);
            if private {
                options.mode(0o600);
            }
            Sink::Through(options.open(&path)?)
        };
        Ok(AtomicFile { path, sink })
    }

    /// The file this replaces (or writes through).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes what was written the content of the target, durably. A FIFO or a device has
    /// nothing to sync (and `/dev/null` refuses to).
    pub fn commit(self) -> io::Result<()> {
        match self.sink {
            Sink::Replacing(file) => file.commit(),
            Sink::Through(_) => Ok(()),
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Replacing(file) => file.write(buf),
            Sink::Through(file) => file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Replacing(file) => file.write_all(buf),
            Sink::Through(file) => file.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Replacing(file) => file.flush(),
            Sink::Through(file) => file.flush(),
        }
    }
}

/// Replaces `path` with `bytes`, as [`AtomicFile`] does.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Syncs the directory holding `path`, after a rename or a creation there: the new entry is
/// durable only once the directory is. Best effort: not every file system can sync one.
pub fn sync_parent_dir(path: &Path) {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Ok(d) = File::open(dir.unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests;
