//! The one error type of the core crate.
//!
//! Every failure of the crate is an [`Error`]: a caller matches its variants, or asks its
//! [`kind`](Error::kind) for what to do about it. Where a failure has several causes worth
//! telling apart, the variant carries a plain detail type (`…Fault`) that is never returned
//! on its own.

mod kind;

use std::path::PathBuf;

pub use kind::ErrorKind;

use crate::checkpoint::IndexFault;
use crate::device::CudaFault;
use crate::distribute::ps::{PsFault, ShardFault};
use crate::distribute::TlsFault;
use crate::export::ExportFault;
use crate::export::RequestFault;
use crate::head::LabelFault;
use crate::summary::SummaryFault;

/// What every configuration-kind message starts with.
const INVALID: &str = "invalid configuration: ";

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
    /// The checkpoint index file is corrupt.
    #[error("{path}: corrupt checkpoint index: {fault}")]
    CheckpointIndex {
        /// The index file at fault.
        path: PathBuf,
        /// What is wrong with it.
        fault: IndexFault,
    },
    /// Optimizer state cannot be serialised (for a checkpoint or a ps task).
    #[error("cannot serialise the optimizer state: {0}")]
    OptimizerStateEncode(#[from] rmp_serde::encode::Error),
    /// Bytes are not optimizer state of this optimizer (a damaged checkpoint or snapshot).
    #[error("cannot read the optimizer state: {0}")]
    OptimizerStateDecode(#[from] rmp_serde::decode::Error),
    /// The input pipeline failed; its message names the file and line or record.
    #[error("input: {0}")]
    Input(#[from] datasets::Error),
    /// A label cannot be used by the head (unknown class, out of range, missing).
    #[error("{0}")]
    Label(LabelFault),
    /// A JSON file could not be parsed, or a value could not be written as JSON.
    #[error("{path}: {source}{}", read_as(.expected))]
    Json {
        /// The JSON file at fault.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
        /// The estimator type a saved estimator was read as: one of another type is the
        /// likely cause.
        expected: Option<&'static str>,
    },
    /// An events file cannot be read back.
    #[error("{path}: {fault}")]
    Summary {
        /// The events file at fault.
        path: PathBuf,
        /// What is wrong with it, naming the record.
        fault: SummaryFault,
    },
    /// Training produced a non-finite loss.
    #[error("loss is {value} at step {step}: training stopped (NaN/Inf loss guard)")]
    NonFiniteLoss {
        /// The global step whose loss was not finite.
        step: u64,
        /// The offending value.
        value: f64,
    },
    /// An export directory is missing a file or holds one this build cannot load.
    #[error("export {path}: {fault}")]
    Export {
        /// The export directory or file at fault.
        path: PathBuf,
        /// What is wrong with it.
        fault: ExportFault,
    },
    /// A serving request's instance does not fit the export's signature (TF Serving
    /// answers it with 400).
    #[error("instance {instance}: {fault}")]
    Request {
        /// The instance's index in the request.
        instance: usize,
        /// What is wrong with it, naming the input.
        fault: RequestFault,
    },
    /// A collective operation or a peer failed.
    #[error(transparent)]
    Distribute(#[from] crate::distribute::CollectiveFault),
    /// Another task of the cluster stopped answering or went away; training cannot go on
    /// until the cluster is restarted (which resumes from the chief's latest checkpoint).
    #[error("lost {task}: {message}")]
    PeerLost {
        /// The task at fault, e.g. `worker:0`.
        task: String,
        /// What happened.
        message: String,
    },
    /// A call to the ps tasks brought no replies, for a reason a training task acts on (the
    /// chief re-initialises a ps that lost its variables, a push that reached no ps is
    /// dropped); one that reaches the run is a lost peer, like [`Error::PeerLost`].
    #[error("lost {0}")]
    Ps(PsFault),
    /// A ps task's shard refused a call; the clients report it as the error that names the
    /// ps (a lost peer, or a configuration that does not fit it).
    #[error("{0}")]
    Shard(ShardFault),
    /// A configuration value is invalid.
    #[error("{INVALID}{0}")]
    Config(String),
    /// The cluster's TLS files (named by `ESTIMATOR_TLS_*`) cannot be used.
    #[error("{INVALID}{0}")]
    Tls(TlsFault),
    /// The cluster cannot be described (TF_CONFIG, a launcher's variables), met (the
    /// rendezvous at rank 0: retryable when a rank was lost) or secured (the token, the
    /// TLS variables).
    #[error("{}{}", if .0.is_retryable() { "" } else { INVALID }, .0)]
    Cluster(#[from] crate::cluster::Error),
    /// The device the run asks for cannot be used here.
    #[error("device cuda:{index}: {fault}")]
    Device {
        /// The CUDA device's index.
        index: usize,
        /// Why it cannot be used.
        fault: CudaFault,
    },
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
    /// Training stopped short of its last step because a task was asked to terminate
    /// (SIGTERM, SIGINT); running the job again resumes it.
    #[error(
        "training stopped at global_step {global_step}: {}; {}",
        match signal {
            Some(signal) => format!("this task received {}", signal_name(*signal)),
            None => "another replica was asked to terminate".to_string(),
        },
        match checkpoint {
            true => "the chief saved a checkpoint there, run the job again to resume from it",
            false => "run the job again to resume from the chief's latest checkpoint",
        }
    )]
    Terminated {
        /// The step this task stopped after.
        global_step: u64,
        /// The signal this task received; `None` where another replica received it.
        signal: Option<i32>,
        /// Whether the chief saved a checkpoint at `global_step`.
        checkpoint: bool,
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
    /// A hook failed; a user's hook keeps its own error as the source.
    #[error("hook {hook}: {source}")]
    Hook {
        /// The hook's name.
        hook: String,
        /// What went wrong.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Exit code of a process whose peer was lost: Kubeflow's `ExitCode` restart policy retries
/// codes of 128 and above, and treats 1–127 as permanent failures.
pub const RETRYABLE_EXIT_CODE: i32 = 128;

impl Error {
    /// The process exit code this error calls for: [`RETRYABLE_EXIT_CODE`] when a restart
    /// of the cluster can fix it (a [`ErrorKind::PeerLost`], or another replica's
    /// termination), 128 + the signal for this task's own termination (143 for SIGTERM, as
    /// if the signal had killed it), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match (self, self.kind()) {
            (
                Error::Terminated {
                    signal: Some(signal),
                    ..
                },
                _,
            ) => RETRYABLE_EXIT_CODE + signal,
            (_, ErrorKind::PeerLost | ErrorKind::Terminated) => RETRYABLE_EXIT_CODE,
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

    /// An [`Error::Json`] about `path`.
    pub fn json(path: impl Into<PathBuf>, source: serde_json::Error) -> Self {
        Error::Json {
            path: path.into(),
            source,
            expected: None,
        }
    }
}

/// The hint a JSON error gives when the file was read as `expected`.
fn read_as(expected: &Option<&'static str>) -> String {
    expected.map_or_else(String::new, |expected| {
        format!(" (saved by another estimator type, or another version of it, than {expected})")
    })
}

#[cfg(test)]
mod tests;

/// A signal's name (SIGTERM), or its number.
fn signal_name(signal: i32) -> String {
    signal_hook::low_level::signal_name(signal)
        .map_or_else(|| format!("signal {signal}"), String::from)
}
