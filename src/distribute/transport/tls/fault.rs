//! Why the cluster's TLS files cannot be used; apart from the loader so that `error.rs` can
//! hold it without an import cycle.

use std::fmt;
use std::path::PathBuf;

use crate::cluster::{TLS_CERT, TLS_KEY};

/// What is wrong with the TLS files, carried by [`Error::Tls`](crate::Error::Tls); each
/// names the variable and the file.
#[derive(Debug)]
pub enum TlsFault {
    /// A file cannot be read.
    Unreadable {
        /// The variable naming the file.
        variable: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// A file holds no usable PEM item of the kind expected.
    Pem {
        /// The variable naming the file.
        variable: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it, as rustls says.
        message: String,
    },
    /// The key is not the certificate's.
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The files are each readable but rustls makes no configuration of them.
    Unusable(String),
}

impl fmt::Display for TlsFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFault::Unreadable {
                variable,
                path,
                source,
            } => write!(f, "{variable} ({}): {source}", path.display()),
            TlsFault::Pem {
                variable,
                path,
                message,
            } => write!(f, "{variable} ({}): {message}", path.display()),
            TlsFault::KeyMismatch { cert, key } => write!(
                f,
                "{TLS_CERT} and {TLS_KEY}: {} is not the private key of {}",
                key.display(),
                cert.display()
            ),
            TlsFault::Unusable(message) => write!(f, "{TLS_CERT} and {TLS_KEY}: {message}"),
        }
    }
}
