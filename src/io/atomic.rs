//! Atomic file writes, with this crate's errors: the workspace's `atomic-file` crate (a temp
//! file in the same directory, fsync, rename, fsync the directory).

use std::io::{BufWriter, Write};
use std::path::Path;

pub(crate) use atomic_file::sync_parent_dir;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` so that a reader sees either the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Serialises `value` as pretty JSON and writes it atomically to `path`.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_vec_pretty(value).map_err(|e| Error::json(path, e))?;
    write_atomic(path, &json)
}

/// A file written in full or not at all, for output streamed as it is produced: the bytes
/// go to a temp file beside `path`, which [`AtomicFile::commit`] syncs and renames over
/// `path`. Dropped without a commit (the run failed half-way), or the process killed, it
/// leaves `path` as it was and (on Linux) no temp file. A symlink's target is what is
/// replaced, the link kept; a FIFO, a device, or anything under `/dev` or `/proc`
/// (`/dev/stdout`) is written through directly instead, as renaming over it would replace
/// it.
pub struct AtomicFile {
    file: BufWriter<atomic_file::AtomicFile>,
}

impl AtomicFile {
    /// Starts writing `path`, creating its directory if need be.
    pub fn create(path: &Path) -> Result<Self> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = atomic_file::AtomicFile::create(path).map_err(|e| Error::io(path, e))?;
        Ok(AtomicFile {
            file: BufWriter::new(file),
        })
    }

    /// Makes what was written the content of `path`, durably.
    pub fn commit(self) -> Result<()> {
        let path = self.file.get_ref().path().to_path_buf();
        let file = self
            .file
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        file.commit().map_err(|e| Error::io(&path, e))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_created_and_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b/c.json");
        write_json_atomic(&nested, &serde_json::json!({"k": 1})).unwrap();
        let text = std::fs::read_to_string(&nested).unwrap();
        assert_eq!(text, "{\n  \"k\": 1\n}");
        let err = AtomicFile::create(dir.path()).err().unwrap().to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(err.contains("it is a directory, not a file"), "{err}");
    }
}
