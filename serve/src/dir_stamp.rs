//! [`DirStamp`]: what a version's directories hold on disk, to tell whether they changed
//! since they were last looked at.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Exports are flat; the bound only keeps a link back up the tree from walking forever.
const MAX_DEPTH: usize = 4;

/// The path, size and modification time of some directories and of everything in them.
/// Equal stamps mean nothing was written, added, renamed or removed there since, to the
/// file system's time resolution: a file rewritten in place changes its own time, not its
/// directory's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirStamp(Vec<(PathBuf, Option<(u64, SystemTime)>)>);

impl DirStamp {
    /// The stamp of `dirs` as they are now.
    pub(crate) fn of(dirs: &[PathBuf]) -> Self {
        let mut entries = Vec::new();
        for dir in dirs {
            walk(dir, MAX_DEPTH, &mut entries);
        }
        Self(entries)
    }
}

fn walk(path: &Path, depth: usize, into: &mut Vec<(PathBuf, Option<(u64, SystemTime)>)>) {
    let meta = std::fs::metadata(path).ok();
    let stamp = meta
        .as_ref()
        .and_then(|m| Some((m.len(), m.modified().ok()?)));
    into.push((path.to_path_buf(), stamp));
    if depth == 0 || !meta.is_some_and(|m| m.is_dir()) {
        return;
    }
    let mut children: Vec<PathBuf> = match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => return,
    };
    children.sort();
    for child in children {
        walk(&child, depth - 1, into);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_rewritten_in_place_or_added_changes_the_stamp_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let version = dir.path().join("7");
        std::fs::create_dir(&version).unwrap();
        std::fs::write(version.join("export.json"), "{").unwrap();
        let dirs = [version.clone()];
        let first = DirStamp::of(&dirs);
        assert_eq!(first, DirStamp::of(&dirs));

        // Same name, other bytes: the directory's own time stays, the file's does not.
        std::fs::write(version.join("export.json"), "{}").unwrap();
        let rewritten = DirStamp::of(&dirs);
        assert_ne!(rewritten, first);

        std::fs::write(version.join("signature.json"), "{}").unwrap();
        assert_ne!(DirStamp::of(&dirs), rewritten);

        // A link back up the tree ends at the depth bound.
        std::os::unix::fs::symlink(dir.path(), version.join("up")).unwrap();
        assert!(DirStamp::of(&dirs).0.len() < 100);
    }
}
