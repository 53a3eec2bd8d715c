//! Writing an export directory: weights, signature and the estimator's configuration.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::base_path::version_dirs;
use crate::checkpoint::{restore_for_inference, RestoredModel};
use crate::device::CpuBackend;
use crate::error::{Error, Result};
use crate::estimator::{Estimator, ESTIMATOR_FILE};
use crate::io::{sync_parent_dir, write_atomic, write_json_atomic, DirLock};
use crate::state::weights_to_safetensors;

/// Weights file of an export (safetensors, readable by Python's `safetensors`).
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// Serving signature file of an export.
pub const SIGNATURE_FILE: &str = "signature.json";
/// Export metadata file (format version, global step, estimator name and type).
pub const EXPORT_FILE: &str = "export.json";

/// Export format version written to [`EXPORT_FILE`].
pub const EXPORT_FORMAT_VERSION: u32 = 1;

/// What [`EXPORT_FILE`] holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportInfo {
    /// Export format version.
    pub format_version: u32,
    /// Global step of the exported checkpoint.
    pub global_step: u64,
    /// Rust type name of the estimator that wrote it (the key of exports made before
    /// [`estimator_name`](ExportInfo::estimator_name)).
    pub estimator_type: String,
    /// The estimator's stable name ([`Estimator::export_name`]); absent from older exports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator_name: Option<String>,
}

impl ExportInfo {
    /// The name the export's estimator is found by: its stable name, or the type name an
    /// older export recorded instead.
    pub fn estimator_key(&self) -> &str {
        self.estimator_name
            .as_deref()
            .unwrap_or(&self.estimator_type)
    }
}

/// Exports the latest checkpoint of `estimator` to `export_dir_base/<unix-timestamp>/`.
///
/// The directory is assembled under a temporary name and renamed into place, so a reader
/// never sees a partial export.
pub fn export<E: Estimator>(estimator: &E, export_dir_base: &Path) -> Result<PathBuf> {
    export_checkpoint(estimator, None, export_dir_base)
}

/// Exports `checkpoint` (or, with `None`, the latest checkpoint) of `estimator` to
/// `export_dir_base/<unix-timestamp>/`, as [`export`] does.
///
/// The timestamp is the current time, or one more than the newest version already under
/// `export_dir_base` when several exports fall in one second, so the newest export always
/// has the largest number (what serving systems load, and what garbage collection keeps).
/// Versions are counted as a server reads a base path: its numbered directories and those
/// one level down (`export/latest/…`).
pub fn export_checkpoint<E: Estimator>(
    estimator: &E,
    checkpoint: Option<&Path>,
    export_dir_base: &Path,
) -> Result<PathBuf> {
    export_numbered(estimator, checkpoint, export_dir_base, export_dir_base)
}

/// [`export_checkpoint`], numbered above every version under `numbering_root` (which holds
/// `export_dir_base`): the exporters of one model directory share one numbering, so that a
/// server reading `model_dir/export` never finds one number naming two different exports.
pub(crate) fn export_numbered<E: Estimator>(
    estimator: &E,
    checkpoint: Option<&Path>,
    export_dir_base: &Path,
    numbering_root: &Path,
) -> Result<PathBuf> {
    let device = Default::default();
    let config = estimator.run_config();
    let restored = restore_for_inference::<CpuBackend, _>(
        &config.model_dir,
        config.tf_random_seed,
        &device,
        checkpoint,
        || estimator.build_model::<CpuBackend>(&device),
    )?;
    let lock = DirLock::acquire(export_dir_base, "export")?;
    let written = write_version(estimator, &restored, export_dir_base, numbering_root);
    // A write cut short by the directory's removal is reported as the removal.
    written.map_err(|e| lock.explain_write_failure(e))
}

/// Writes `restored` of `estimator` as a new version under `export_dir_base`: assembled in
/// a temporary directory, renamed into place.
fn write_version<E: Estimator>(
    estimator: &E,
    restored: &RestoredModel<E::Model<CpuBackend>>,
    export_dir_base: &Path,
    numbering_root: &Path,
) -> Result<PathBuf> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let stamp = free_stamp(export_dir_base, numbering_root, now)?;
    let final_dir = export_dir_base.join(stamp.to_string());
    let tmp_dir = export_dir_base.join(format!(".tmp-{stamp}-{}", std::process::id()));
    std::fs::create_dir_all(&tmp_dir).map_err(|e| Error::io(&tmp_dir, e))?;

    let step = restored.global_step.to_string();
    let weights = weights_to_safetensors(
        &restored.model,
        &[
            ("format", "pt"),
            ("producer", "estimator"),
            ("global_step", &step),
        ],
    )?;
    write_atomic(&tmp_dir.join(WEIGHTS_FILE), &weights)?;
    write_json_atomic(
        &tmp_dir.join(SIGNATURE_FILE),
        &estimator.serving_signature(),
    )?;
    write_json_atomic(&tmp_dir.join(ESTIMATOR_FILE), estimator)?;
    let info = ExportInfo {
        format_version: EXPORT_FORMAT_VERSION,
        global_step: restored.global_step,
        estimator_type: std::any::type_name::<E>().to_string(),
        estimator_name: Some(E::export_name()),
    };
    write_json_atomic(&tmp_dir.join(EXPORT_FILE), &info)?;
    std::fs::rename(&tmp_dir, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
    // Else a crash could undo the rename after the caller acted on it (a best-export record
    // naming it, older exports collected).
    sync_parent_dir(&final_dir);
    Ok(final_dir)
}

/// The timestamps of the exports in `export_dir_base` (its directories named by a number),
/// oldest first; a missing directory holds none.
pub fn export_stamps(export_dir_base: &Path) -> Result<Vec<u64>> {
    let entries = match std::fs::read_dir(export_dir_base) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(export_dir_base, e)),
    };
    let mut stamps = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(export_dir_base, e))?;
        let name = entry.file_name();
        let Some(stamp) = name.to_str().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        if entry.path().is_dir() && name.to_str() == Some(&stamp.to_string()) {
            stamps.push(stamp);
        }
    }
    stamps.sort_unstable();
    Ok(stamps)
}

/// The first number from `now` on above every version under `numbering_root` and free in
/// `export_dir_base`; an error when a directory there already took the last one (a version
/// is any numbered directory name, so one of them may be `u64::MAX`).
fn free_stamp(export_dir_base: &Path, numbering_root: &Path, now: u64) -> Result<u64> {
    let newest = newest_version(numbering_root)?;
    let exhausted = |taken: u64| {
        Error::Config(format!(
            "{}: export version {taken} is the largest number there is; no number is left \
             for a newer export (remove that directory)",
            numbering_root.display()
        ))
    };
    let next = match newest {
        Some(newest) => newest.checked_add(1).ok_or_else(|| exhausted(newest))?,
        None => 0,
    };
    let mut stamp = now.max(next);
    while export_dir_base.join(stamp.to_string()).exists() {
        stamp = stamp.checked_add(1).ok_or_else(|| exhausted(stamp))?;
    }
    Ok(stamp)
}

/// The largest version under `root` as a server reads a base path: its numbered directories
/// and those in the directories between (labels, such as the exporters' names).
fn newest_version(root: &Path) -> Result<Option<u64>> {
    match version_dirs(root) {
        Ok(dirs) => Ok(dirs.into_iter().map(|(version, _, _)| version).max()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(root, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_counts_numbered_directories_and_those_under_labels() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(newest_version(&dir.path().join("none")).unwrap(), None);
        for name in ["5", "latest/9", "best/7", ".tmp-12-1", "staging/.tmp-13-1"] {
            std::fs::create_dir_all(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("11"), "a file, not an export").unwrap();
        assert_eq!(newest_version(dir.path()).unwrap(), Some(9));
        assert_eq!(newest_version(&dir.path().join("best")).unwrap(), Some(7));
    }

    #[test]
    fn a_version_named_u64_max_is_an_error_naming_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("latest");
        std::fs::create_dir_all(base.join("5")).unwrap();
        assert_eq!(free_stamp(&base, dir.path(), 3).unwrap(), 6);
        std::fs::create_dir_all(base.join(u64::MAX.to_string())).unwrap();
        let err = free_stamp(&base, dir.path(), 3).unwrap_err().to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(err.contains("no number is left"), "{err}");
    }
}
