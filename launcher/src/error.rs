//! The one error type of the launcher: why it cannot start a cluster, each naming the flag,
//! variable or file at fault.

use estimator_cluster::CUDA_VISIBLE_DEVICES;

/// Exit code of a usage error.
pub const USAGE: i32 = 2;

/// Why a cluster cannot be started (or certificates issued).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Nothing after `--`.
    #[error(
        "no command to run: give it after --, as in estimator-launch --workers 2 -- \
         dnn-classifier train …"
    )]
    NoCommand,
    /// The program after `--` is an empty string.
    #[error("the command after -- is an empty string")]
    EmptyCommand,
    /// `--no-chief` without a worker to act as chief.
    #[error("--no-chief needs --workers 1 or more (worker 0 then acts as chief)")]
    NoTrainingTask,
    /// `--gpus` asks for more GPUs than the launcher's own `CUDA_VISIBLE_DEVICES` lists.
    #[error(
        "--gpus {count}: {CUDA_VISIBLE_DEVICES}=\"{visible}\" lists only {listed} GPU{}",
        if *listed == 1 { "" } else { "s" }
    )]
    TooFewGpus {
        /// GPUs asked for.
        count: usize,
        /// The launcher's `CUDA_VISIBLE_DEVICES`.
        visible: String,
        /// GPUs it lists.
        listed: usize,
    },
    /// More tasks than a host has ports for, each listening on one of its own.
    #[error(
        "--workers {workers} and --ps {ps} ask for more than {max} tasks, each of which \
         listens on a port of its own on --host"
    )]
    TooManyTasks {
        /// `--workers`.
        workers: usize,
        /// `--ps`.
        ps: usize,
        /// The most tasks a launch starts.
        max: usize,
    },
    /// A `--task` of `certs` is not `NAME=HOST[,HOST...]` with a name and a host.
    #[error("--task '{0}': expected NAME=HOST[,HOST...] with a name and a host")]
    TaskSpec(String),
    /// A `--task` of `certs` whose NAME cannot name files of its own in `--out`.
    #[error("--task '{spec}': {reason}")]
    TaskName {
        /// The `--task` as given.
        spec: String,
        /// Why its name cannot be used.
        reason: String,
    },
    /// The launcher's `CUDA_VISIBLE_DEVICES` holds an entry `--gpus` cannot hand out.
    #[error("--gpus {count}: {CUDA_VISIBLE_DEVICES}=\"{visible}\" {reason}")]
    UnusableGpus {
        /// GPUs asked for.
        count: usize,
        /// The launcher's `CUDA_VISIBLE_DEVICES`.
        visible: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Certificates cannot be issued or written.
    #[error(transparent)]
    Certificates(#[from] estimator_cluster::Error),
}

impl LaunchError {
    /// The exit code: [`USAGE`] for a command line that cannot work,
    /// 1 for a failure to write certificates.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::Certificates(_) => 1,
            _ => USAGE,
        }
    }
}
