//! The one error type of the cluster crate: why a cluster cannot be described, met or
//! secured. Each message names the variable, field, rank or file at fault.

use std::path::PathBuf;
use std::sync::Arc;

use crate::{CLUSTER_TOKEN, CLUSTER_TOKEN_FILE, TLS_CA, TLS_CERT, TLS_KEY};

/// Why a cluster cannot be described (TF_CONFIG, a launcher's variables), met (the
/// rendezvous at rank 0) or secured (token, TLS files, certificates).
///
/// Cloneable so that a process's one rendezvous outcome can be handed to every caller.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// TF_CONFIG cannot be used; `detail` follows the variable's name and names the field.
    #[error("TF_CONFIG{detail}")]
    TfConfig {
        /// What is wrong, starting with a space or a field path (`.task.index …`).
        detail: String,
    },
    /// A variable cannot be used: a launcher's (torchrun's `RANK`, mpirun's
    /// `OMPI_COMM_WORLD_SIZE`, srun's `SLURM_STEP_NODELIST`) or one of this crate's own.
    #[error("{message}")]
    Variable {
        /// The variable at fault.
        variable: String,
        /// What is wrong with it, naming it.
        message: String,
    },
    /// The ranks of one world disagree (size, rank, token): a restart cannot mend it.
    #[error("{0}")]
    RendezvousRefused(String),
    /// Rank 0's rendezvous was not reached, not joined by every rank in time, or broke off:
    /// a rank started late or lost, which a restart of the world can mend.
    #[error("{0}")]
    RendezvousLost(String),
    /// Both ways of giving the cluster token are used.
    #[error("both {CLUSTER_TOKEN} and {CLUSTER_TOKEN_FILE} are set; set one")]
    TokenTwice,
    /// The token variable holds bytes that are not text.
    #[error("{CLUSTER_TOKEN} is not valid UTF-8")]
    TokenNotUtf8,
    /// The token file cannot be read.
    #[error("cannot read the cluster token from {} ({CLUSTER_TOKEN_FILE}): {source}", path.display())]
    TokenUnreadable {
        /// The token file.
        path: PathBuf,
        /// Why it cannot be read.
        source: Arc<std::io::Error>,
    },
    /// The token holds characters a gRPC header cannot carry.
    #[error("the cluster token must be printable ASCII")]
    TokenNotPrintable,
    /// The token is empty (or only white space, in the file).
    #[error("the cluster token ({CLUSTER_TOKEN} or {CLUSTER_TOKEN_FILE}) is empty")]
    TokenEmpty,
    /// Some of the three TLS files are named, not all.
    #[error(
        "{missing} is not set while {set} is: mutual TLS needs {TLS_CERT}, {TLS_KEY} and {TLS_CA}"
    )]
    TlsIncomplete {
        /// The first variable that is not set.
        missing: &'static str,
        /// A variable that is.
        set: &'static str,
    },
    /// A TLS variable is set but empty.
    #[error("{0} is empty")]
    TlsEmpty(&'static str),
    /// A TLS variable holds bytes that are not text.
    #[error("{0} is not valid UTF-8")]
    TlsNotUtf8(&'static str),
    /// A host name cannot go into a certificate.
    #[error("cannot issue a certificate for {task} (hosts {hosts:?}): {reason}")]
    CertificateIssue {
        /// The task.
        task: String,
        /// Its host names.
        hosts: Vec<String>,
        /// What rcgen said.
        reason: String,
    },
    /// A certificate or key file cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    CertificateWrite {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Arc<std::io::Error>,
    },
}

impl Error {
    /// Whether a restart of the cluster can mend it: only a rendezvous that lost a rank.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::RendezvousLost(_))
    }

    pub(crate) fn tf_config(detail: impl Into<String>) -> Self {
        Error::TfConfig {
            detail: detail.into(),
        }
    }

    pub(crate) fn variable(variable: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Variable {
            variable: variable.into(),
            message: message.into(),
        }
    }
}
