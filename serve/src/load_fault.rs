//! [`LoadFault`]: why a version of a model is not served.

use std::path::{Path, PathBuf};

/// Why a version directory is not served; [`ModelVersions::refused`] keeps one per version,
/// and a model none of whose versions loads is refused at start with the newest one's.
///
/// [`ModelVersions::refused`]: crate::ModelVersions::refused
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadFault {
    /// `export.json` cannot be read, or is not an export's.
    #[error("{}: {reason}", path.display())]
    ExportInfo {
        /// The `export.json` at fault.
        path: PathBuf,
        /// What reading or parsing it said.
        reason: String,
    },
    /// The export is of an estimator this server was not given a loader for.
    #[error(
        "{}: estimator {estimator} is not one this server loads (it loads {})",
        dir.display(),
        known.join(", ")
    )]
    UnknownEstimator {
        /// The version directory.
        dir: PathBuf,
        /// The estimator `export.json` names.
        estimator: String,
        /// The estimators this server loads.
        known: Vec<String>,
    },
    /// The device cannot be used, or the export's variables do not load.
    #[error("{}: {reason}", dir.display())]
    Load {
        /// The version directory.
        dir: PathBuf,
        /// The core crate's error, as printed.
        reason: String,
    },
    /// A request of the version's warmup file (`assets.extra/tf_serving_warmup_requests`)
    /// cannot be read or is not answered.
    #[error("{}: {reason}", path.display())]
    Warmup {
        /// The warmup file.
        path: PathBuf,
        /// Which record, and what reading or answering it said.
        reason: String,
    },
    /// Several directories name the version and hold different exports.
    #[error(
        "version {version} is ambiguous: {} hold different exports; none of them is served \
         (remove or renumber all but one)",
        joined(dirs)
    )]
    Ambiguous {
        /// The version.
        version: u64,
        /// Every directory naming it.
        dirs: Vec<PathBuf>,
    },
    /// Several directories name the version and could not be compared.
    #[error(
        "version {version} is ambiguous: {} cannot be compared ({reason}); none of them is \
         served",
        joined(dirs)
    )]
    Incomparable {
        /// The version.
        version: u64,
        /// Every directory naming it.
        dirs: Vec<PathBuf>,
        /// What reading them said.
        reason: String,
    },
}

fn joined(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

impl LoadFault {
    /// A [`LoadFault::Load`] for `dir`.
    pub(crate) fn load(dir: &Path, reason: impl std::fmt::Display) -> Self {
        LoadFault::Load {
            dir: dir.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}
