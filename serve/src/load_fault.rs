//! [`LoadFault`]: why a version of a model is not served.

use std::path::{Path, PathBuf};

use estimator::ErrorKind;
use tonic::Code;

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
        /// Whether it is missing (rather than unreadable or not an export's).
        missing: bool,
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
        /// The canonical code of the failure (`DATA_LOSS` for damaged variables,
        /// `UNAVAILABLE` for a device that cannot be used, …).
        code: Code,
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
    /// The version's own batching parameters (`batching_params.pbtxt`) cannot be read.
    #[error("{}: {reason}", path.display())]
    Batching {
        /// The file.
        path: PathBuf,
        /// What reading or parsing it said.
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
    /// A [`LoadFault::Load`] for `dir`, of canonical code `code`.
    pub(crate) fn load(dir: &Path, reason: impl std::fmt::Display, code: Code) -> Self {
        LoadFault::Load {
            dir: dir.to_path_buf(),
            reason: reason.to_string(),
            code,
        }
    }

    /// A [`LoadFault::Load`] for `dir` from the core crate's error, its code by kind.
    pub(crate) fn of_error(dir: &Path, error: &estimator::Error) -> Self {
        let code = match error.kind() {
            ErrorKind::Checkpoint | ErrorKind::Export => Code::DataLoss,
            ErrorKind::Device => Code::Unavailable,
            ErrorKind::Config => Code::FailedPrecondition,
            ErrorKind::Input | ErrorKind::Request => Code::InvalidArgument,
            _ => Code::Unknown,
        };
        Self::load(dir, error, code)
    }

    /// The canonical error code a version's status gives this fault, as TF Serving's does
    /// for a version that failed to load.
    pub fn code(&self) -> Code {
        match self {
            LoadFault::ExportInfo { missing: true, .. } => Code::NotFound,
            LoadFault::ExportInfo { .. } => Code::DataLoss,
            LoadFault::UnknownEstimator { .. } => Code::Unimplemented,
            LoadFault::Load { code, .. } => *code,
            LoadFault::Warmup { .. } | LoadFault::Batching { .. } => Code::InvalidArgument,
            LoadFault::Ambiguous { .. } | LoadFault::Incomparable { .. } => {
                Code::FailedPrecondition
            }
        }
    }
}

/// The name of canonical code `code` (TF's `error::Code`), as a REST status writes it.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_has_the_code_tf_serving_gives_such_a_failed_load() {
        let dir = Path::new("/models/m/3");
        let export_info = |missing| LoadFault::ExportInfo {
            path: dir.join("export.json"),
            reason: String::new(),
            missing,
        };
        assert_eq!(export_info(true).code(), Code::NotFound);
        assert_eq!(export_info(false).code(), Code::DataLoss);
        let damaged = estimator::Error::Export {
            path: dir.to_path_buf(),
            fault: estimator::export::ExportFault::Version(99),
        };
        assert_eq!(LoadFault::of_error(dir, &damaged).code(), Code::DataLoss);
        let device = estimator::Error::Device {
            index: 3,
            fault: estimator::device::CudaFault::NoDriver,
        };
        assert_eq!(LoadFault::of_error(dir, &device).code(), Code::Unavailable);
        let names = [Code::Ok, Code::DataLoss, Code::FailedPrecondition].map(code_name);
        assert_eq!(names, ["OK", "DATA_LOSS", "FAILED_PRECONDITION"]);
    }
}
