//! Atomic file writes: a temp file in the same directory, fsync, rename, fsync the directory.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
/// `path`. Dropped without a commit (the run failed half-way), the temp file is removed and
/// `path` is left as it was. A symlink's target is what is replaced, the link kept; a FIFO,
/// a device, or anything under `/dev` or `/proc` (`/dev/stdout`) is written through
/// directly instead, as renaming over it would replace it.
pub struct AtomicFile {
    /// The file written: `path`, or the file its symlinks lead to.
    path: PathBuf,
    /// The temp file renamed over `path` on commit; `None` when `path` is written directly.
    tmp: Option<PathBuf>,
    file: Option<BufWriter<fs::File>>,
}

impl AtomicFile {
    /// Starts writing `path`, creating its directory if need be.
    pub fn create(path: &Path) -> Result<Self> {
        // Two writers of one path in one process each get their own temp file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let special = path.starts_with("/dev") || path.starts_with("/proc");
        let (path, replaced) = match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                let e = std::io::Error::other("it is a directory, not a file");
                return Err(Error::io(path, e));
            }
            Ok(meta) if meta.is_file() && !special => (
                fs::canonicalize(path).map_err(|e| Error::io(path, e))?,
                true,
            ),
            Ok(_) => (path.to_path_buf(), false),
            Err(_) => (path.to_path_buf(), !special),
        };
        let path = path.as_path();
        let dir = parent_dir(path);
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = replaced.then(|| {
            dir.join(format!(
                ".{file_name}.tmp-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ))
        });
        let file =
            fs::File::create(tmp.as_deref().unwrap_or(path)).map_err(|e| Error::io(path, e))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            file: Some(BufWriter::new(file)),
        })
    }

    /// Makes what was written the content of `path`, durably.
    pub fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("committed once");
        let tmp = self.tmp.take();
        let result = (|| {
            let file = file.into_inner().map_err(|e| e.into_error())?;
            let Some(tmp) = &tmp else {
                return Ok(());
            };
            file.sync_all()?;
            fs::rename(tmp, &self.path)?;
            sync_parent_dir(&self.path);
            Ok(())
        })();
        result.map_err(|e| {
            if let Some(tmp) = &tmp {
                let _ = fs::remove_file(tmp);
            }
            Error::io(&self.path, e)
        })
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Syncs the directory holding `path`, after a rename or a creation there: the new entry is
/// durable only once the directory is. Best effort: not every file system can sync one.
pub(crate) fn sync_parent_dir(path: &Path) {
    if let Ok(d) = fs::File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_file_stays_until_a_commit_and_a_dropped_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        fs::write(&path, "old\n").unwrap();
        let entries = || fs::read_dir(dir.path()).unwrap().count();

        let mut failed = AtomicFile::create(&path).unwrap();
        failed.write_all(b"half").unwrap();
        failed.flush().unwrap();
        assert_eq!(entries(), 2, "the temp file sits beside the old one");
        drop(failed);
        assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(entries(), 1, "a dropped write leaves no temp file");

        let mut done = AtomicFile::create(&path).unwrap();
        done.write_all(b"new\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
        done.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(entries(), 1);

        let nested = dir.path().join("a/b/c.json");
        write_atomic(&nested, b"{}").unwrap();
        assert_eq!(fs::read(&nested).unwrap(), b"{}");
        let err = AtomicFile::create(dir.path()).err().unwrap().to_string();
        assert!(err.contains("it is a directory, not a file"), "{err}");
    }

    #[test]
    fn a_symlink_s_target_is_replaced_and_a_fifo_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut file = AtomicFile::create(&link).unwrap();
        file.write_all(b"new").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        file.commit().unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");

        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RWXU).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        let mut piped = AtomicFile::create(&fifo).unwrap();
        piped.write_all(b"streamed").unwrap();
        piped.commit().unwrap();
        assert!(!fs::metadata(&fifo).unwrap().is_file(), "still a FIFO");
        assert_eq!(reader.join().unwrap(), "streamed");
    }
}
