//! The one error type of the core crate.

use std::path::PathBuf;

/// Everything that can go wrong in `estimator`, each message naming what it is about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read, written or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory at fault.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A checkpoint is corrupt, incomplete or does not fit the model.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint file at fault.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The input pipeline failed.
    #[error("input: {0}")]
    Input(#[from] datasets::Error),
    /// A JSON file could not be parsed or written.
    #[error("{path}: {message}")]
    Json {
        /// The JSON file at fault.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// Training produced a non-finite loss.
    #[error("loss is {value} at step {step}: training stopped (NaN/Inf loss guard)")]
    NonFiniteLoss {
        /// The global step whose loss was not finite.
        step: u64,
        /// The offending value.
        value: f64,
    },
    /// An export directory is missing a file or holds an inconsistent one.
    #[error("export {path}: {message}")]
    Export {
        /// The export directory or file at fault.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A label cannot be used by the head (unknown class, out of range, missing).
    #[error("{0}")]
    Label(String),
    /// A collective operation or a peer failed.
    #[error(transparent)]
    Distribute(#[from] crate::distribute::DistributeError),
    /// Another task of the cluster stopped answering or went away; training cannot go on
    /// until the cluster is restarted (which resumes from the chief's latest checkpoint).
    #[error("lost {task}: {message}")]
    PeerLost {
        /// The task at fault, e.g. `worker:0`.
        task: String,
        /// What happened.
        message: String,
    },
    /// A configuration value is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Training stopped before its last step with no hook asking for it and input left:
    /// the job is not done, whatever the tasks said.
    #[error(
        "training ended at global_step {global_step}, short of its last step {last_step}: \
         {reason}"
    )]
    EndedShort {
        /// Where training stopped.
        global_step: u64,
        /// Where it was to stop.
        last_step: u64,
        /// Who stopped it.
        reason: String,
    },
    /// The directory a run writes was removed while it ran.
    #[error(
        "{}: removed (or replaced) while this run was writing it; nothing more is saved \
         there — restore it, or start again with another directory",
        dir.display()
    )]
    DirGone {
        /// The directory.
        dir: PathBuf,
    },
    /// Another run holds the directory this one would write.
    #[error(
        "{}: in use by {owner}; two runs writing one model directory would overwrite each \
         other's checkpoints: wait for that run to end, or give this one another directory",
        dir.display()
    )]
    DirInUse {
        /// The directory.
        dir: PathBuf,
        /// Who holds it, as its lock file says.
        owner: String,
    },
    /// A ps task cannot set up its server.
    #[error("ps task cannot {what}: {source}")]
    PsTask {
        /// What it was doing.
        what: &'static str,
        /// The failure.
        source: std::io::Error,
    },
    /// A thread of this process panicked (its message went to standard error).
    #[error("{thread} panicked")]
    Panicked {
        /// The thread, e.g. `Mirrored replica:1`.
        thread: String,
    },
    /// The cluster cannot be described (TF_CONFIG, a launcher's variables), met (the
    /// rendezvous at rank 0: retryable when a rank was lost) or secured (the token).
    #[error("{}{}", if .0.is_retryable() { "" } else { "invalid configuration: " }, .0)]
    Cluster(#[from] crate::cluster::Error),
    /// Optimizer state cannot be written or read back.
    #[error(transparent)]
    OptimizerState(#[from] crate::optimizer::OptimizerStateError),
    /// The cluster's TLS files cannot be used.
    #[error("invalid configuration: {0}")]
    Tls(#[from] crate::distribute::TlsError),
    /// The checkpoint index file is corrupt.
    #[error("{path}: corrupt checkpoint index: {source}")]
    CheckpointIndex {
        /// The index file at fault.
        path: PathBuf,
        /// What is wrong with it.
        source: crate::checkpoint::IndexError,
    },
    /// An events file cannot be read back.
    #[error(transparent)]
    Summary(#[from] crate::summary::SummaryError),
    /// A hook failed.
    #[error("hook {hook}: {message}")]
    Hook {
        /// The hook's name.
        hook: String,
        /// What went wrong.
        message: String,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Exit code of a process whose peer was lost: Kubeflow's `ExitCode` restart policy retries
/// codes of 128 and above, and treats 1–127 as permanent failures.
pub const RETRYABLE_EXIT_CODE: i32 = 128;

impl Error {
    /// The process exit code this error calls for: [`RETRYABLE_EXIT_CODE`] when a restart
    /// of the cluster can fix it, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::PeerLost { .. } => RETRYABLE_EXIT_CODE,
            Error::Cluster(cluster) if cluster.is_retryable() => RETRYABLE_EXIT_CODE,
            _ => 1,
        }
    }

    /// An [`Error::Io`] about `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An [`Error::Checkpoint`] about `path`.
    pub fn checkpoint(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Checkpoint {
            path: path.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Error as ClusterError;

    #[test]
    fn a_rendezvous_that_lost_a_rank_is_retryable_and_a_disagreement_a_configuration_error() {
        let lost = Error::from(ClusterError::RendezvousLost(
            "rank 1 cannot reach rank 0's rendezvous".into(),
        ));
        assert_eq!(lost.exit_code(), RETRYABLE_EXIT_CODE);
        assert_eq!(lost.to_string(), "rank 1 cannot reach rank 0's rendezvous");
        let refused = Error::from(ClusterError::RendezvousRefused(
            "rank 1 has WORLD_SIZE = 3, rank 0 has 2".into(),
        ));
        assert_eq!(refused.exit_code(), 1);
        assert_eq!(
            refused.to_string(),
            "invalid configuration: rank 1 has WORLD_SIZE = 3, rank 0 has 2"
        );
        assert_eq!(Error::from(ClusterError::TokenEmpty).exit_code(), 1);
    }
}
