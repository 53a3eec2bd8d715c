//! What a caller can do about an [`Error`]: the kinds its variants fall into.

use super::Error;
use crate::distribute::ps::ShardFault;
use crate::distribute::CollectiveFault;

/// What kind of failure an [`Error`] is, for a caller that acts on it (retries, reports to
/// the user, answers a request) rather than on each variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A setting, flag, environment variable or a file one names is wrong (the TLS
    /// files, TF_CONFIG, the cluster token, a model directory in use): fix it and rerun.
    Config,
    /// The input data cannot be used; the message names the file and line or record.
    Input,
    /// A checkpoint, its index or the optimizer state in it is damaged or does not fit.
    Checkpoint,
    /// A file cannot be read, written or parsed (JSON, an events file, a vanished
    /// directory).
    Io,
    /// An export directory cannot be loaded.
    Export,
    /// A serving request does not fit the signature (an HTTP 400).
    Request,
    /// Another task went away: restarting the cluster can fix it (exit code 128).
    PeerLost,
    /// A peer and this task cannot work together as configured (another world size,
    /// token or CA): no restart fixes it.
    Refused,
    /// A collective was called wrongly, or a peer misbehaved in a way no restart fixes.
    Collective,
    /// The device asked for cannot be used here.
    Device,
    /// Training itself stopped: a non-finite loss, a hook, a panic, an early end.
    Training,
    /// A task was asked to terminate (SIGTERM, SIGINT) and training stopped with a
    /// checkpoint: running the job again resumes it (a retryable exit code).
    Terminated,
}

impl Error {
    /// The kind of this error; [`ErrorKind::PeerLost`] or [`ErrorKind::Terminated`]
    /// exactly when [`exit_code`](Error::exit_code) is retryable.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_) | Error::Tls(_) | Error::DirInUse { .. } => ErrorKind::Config,
            Error::Cluster(cluster) if cluster.is_retryable() => ErrorKind::PeerLost,
            Error::Cluster(_) => ErrorKind::Config,
            Error::Input(_) | Error::Label(_) => ErrorKind::Input,
            Error::Checkpoint { .. }
            | Error::CheckpointIndex { .. }
            | Error::OptimizerStateEncode(_)
            | Error::OptimizerStateDecode(_) => ErrorKind::Checkpoint,
            Error::Io { .. }
            | Error::Json { .. }
            | Error::Summary { .. }
            | Error::DirGone { .. }
            | Error::PsTask { .. } => ErrorKind::Io,
            Error::Export { .. } => ErrorKind::Export,
            Error::Request { .. } => ErrorKind::Request,
            Error::PeerLost { .. } | Error::Ps(_) => ErrorKind::PeerLost,
            Error::Shard(
                ShardFault::NotInitialised
                | ShardFault::ChiefLost { .. }
                | ShardFault::SyncTimeout { .. },
            ) => ErrorKind::PeerLost,
            Error::Shard(_) => ErrorKind::Config,
            Error::Distribute(CollectiveFault::Refused { .. }) => ErrorKind::Refused,
            Error::Distribute(_) => ErrorKind::Collective,
            Error::Device { .. } => ErrorKind::Device,
            Error::NonFiniteLoss { .. }
            | Error::EndedShort { .. }
            | Error::Panicked { .. }
            | Error::Hook { .. } => ErrorKind::Training,
            Error::Terminated { .. } => ErrorKind::Terminated,
        }
    }
}
