//! A file replaced whole or not at all: written to a temp file beside it, synced, renamed
//! over it, the directory synced (the `estimator` crate's `AtomicFile`, which this crate,
//! below it, cannot use).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The temp file of a write not yet committed; dropped uncommitted, it is removed and the
/// target is left as it was.
pub(super) struct Replacement {
    /// The file replaced: the path given, or the file its symlinks lead to (the link kept).
    target: PathBuf,
    /// `None` when the target is written through directly: a FIFO, a device or anything
    /// under `/dev` or `/proc` (`/dev/stdout`), which a rename would replace.
    tmp: Option<PathBuf>,
}

impl Replacement {
    /// Starts replacing `path`: the file to write, and what commits it.
    pub(super) fn create(path: &Path) -> io::Result<(Self, File)> {
        // Two writers of one path in one process each get their own temp file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let special = path.starts_with("/dev") || path.starts_with("/proc");
        let (target, replaced) = match fs::metadata(path) {
            Ok(meta) if meta.is_file() && !special => (fs::canonicalize(path)?, true),
            Ok(_) => (path.to_path_buf(), false),
            Err(_) => (path.to_path_buf(), !special),
        };
        if !replaced {
            let file = File::create(&target)?;
            return Ok((Self { target, tmp: None }, file));
        }
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = parent_dir(&target).join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let file = File::options().write(true).create_new(true).open(&tmp)?;
        let tmp = Some(tmp);
        Ok((Self { target, tmp }, file))
    }

    /// Makes what was written to `file` the target's content, durably.
    pub(super) fn commit(mut self, file: File) -> io::Result<()> {
        // A FIFO or a device has nothing to sync (and `/dev/null` refuses to).
        let Some(tmp) = &self.tmp else {
            return Ok(());
        };
        file.sync_all()?;
        fs::rename(tmp, &self.target)?;
        self.tmp = None;
        // The rename is durable only once the directory entry is.
        if let Ok(dir) = File::open(parent_dir(&self.target)) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}
