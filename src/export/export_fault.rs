//! Why an export cannot be loaded; apart from the loader so that `error.rs` can hold it
//! without an import cycle.

use std::fmt;

/// What is wrong with a file of an export, carried by [`Error::Export`](crate::Error::Export)
/// with the file's path.
#[derive(Debug)]
pub enum ExportFault {
    /// The file cannot be read (a missing file: not an export, or an unfinished one).
    Unreadable(std::io::Error),
    /// The file is not the JSON it should be.
    Json(serde_json::Error),
    /// The export was written in a format this build does not load.
    Version(u32),
    /// The serving signature is one no request could be served by (an input without a name
    /// or named twice, a shape with a 0 or too many dimensions, an output named twice).
    Signature(String),
    /// The directory is an export base (an exporter's, or `--export-dir-base`) holding
    /// these versions, newest last, not an export itself.
    Base(Vec<u64>),
}

impl fmt::Display for ExportFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportFault::Unreadable(e) => write!(f, "cannot read: {e}"),
            ExportFault::Json(e) => write!(f, "{e}"),
            ExportFault::Version(version) => {
                write!(f, "unsupported export format version {version}")
            }
            ExportFault::Signature(message) => write!(f, "{message}"),
            ExportFault::Base(versions) => {
                let listed: Vec<String> = versions.iter().map(u64::to_string).collect();
                let newest = listed.last().map_or("", String::as_str);
                write!(
                    f,
                    "not an export but a base of export versions ({}): give one of them, \
                     the newest being {newest}",
                    listed.join(", ")
                )
            }
        }
    }
}
