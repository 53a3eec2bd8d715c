//! Command-line interface of `estimator-launch`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use crate::error::LaunchError;
pub use crate::error::USAGE;
use crate::layout::Roles;

/// Start a local TF_CONFIG cluster (a chief, workers, ps, an evaluator) running one command,
/// or explain what TF_CONFIG (or another launcher's variables) makes of this process.
#[derive(Debug, Parser)]
#[command(
    name = "estimator-launch",
    version,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "SUBCOMMAND",
    override_usage = "estimator-launch [OPTIONS] -- <COMMAND> [ARGS]...\n       \
                      estimator-launch explain [--model-dir DIR]\n       \
                      estimator-launch certs --out DIR --task NAME=HOST...",
    after_help = "Every task runs COMMAND with the launcher's environment plus its own TF_CONFIG; \
                  its output lines come back prefixed with the task's name ([worker:0] …). \
                  The launcher exits with the chief's exit code once the chief has exited and \
                  the other tasks have exited or been killed after --grace-secs. Ctrl-C or \
                  SIGTERM goes on to the tasks as SIGTERM (training tasks first), a second one \
                  kills them.\n\n\
                  Example:\n  estimator-launch --workers 2 -- dnn-classifier train \
                  --train iris_train.csv --label-column label --max-steps 1000 --model-dir /tmp/iris\n\n\
                  On a machine with 4 GPUs, one per replica:\n  estimator-launch --workers 3 --gpus 4 \
                  -- dnn-classifier train --device cuda …"
)]
pub struct Cli {
    /// `explain`, or none to launch a cluster.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The cluster to launch.
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print where this process's cluster comes from (TF_CONFIG, or torchrun's, mpirun's or
    /// srun's variables), its role, chief, rank, world size, strategy and peers, and whether
    /// each peer's host resolves.
    #[command(
        after_help = "Example (inside a TFJob pod):\n  estimator-launch explain --model-dir /model/iris"
    )]
    Explain(ExplainArgs),
    /// Write a new CA and one certificate and key per task for mutual TLS between the tasks
    /// (the files ESTIMATOR_TLS_CERT, _KEY and _CA name), e.g. for a Kubernetes Secret.
    #[command(
        after_help = "Example (the pods of a TFJob named dnn-classifier-iris):\n  \
                      estimator-launch certs --out certs \\\n    \
                      --task dnn-classifier-iris-chief-0=dnn-classifier-iris-chief-0.default.svc \\\n    \
                      --task dnn-classifier-iris-worker-0=dnn-classifier-iris-worker-0.default.svc"
    )]
    Certs(CertsArgs),
}

/// Flags of `certs`.
#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Directory the files are written to: ca.crt, and NAME.crt and NAME.key per task.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A task: its name (the certificate's CN and file name) and the hosts its peers dial
    /// it at (DNS names or IPs). Repeat per task.
    #[arg(long = "task", value_name = "NAME=HOST[,HOST...]", required = true)]
    pub tasks: Vec<String>,
}

/// Flags of `explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The model directory the task would use.
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
}

/// Flags of a launch.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Training workers besides the chief.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub workers: usize,
    /// Parameter servers.
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub ps: usize,
    /// Start an evaluator task too.
    #[arg(long)]
    pub evaluator: bool,
    /// No chief task: worker 0 acts as chief, as in TF.
    #[arg(long)]
    pub no_chief: bool,
    /// Host every task listens on (ports are picked free on it).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Seconds the other tasks get to exit after the chief has; then they are killed. The
    /// default exceeds the tasks' default peer timeout (60 s) and its margin, so that a
    /// task waiting on a lost peer exits by itself, with its own code and message.
    #[arg(long, value_name = "SECS", default_value_t = 90)]
    pub grace_secs: u64,
    /// Start a task again when it exits with a retryable code (128 and above: it lost a
    /// peer, or a signal killed it), at most N times per task — Kubeflow's
    /// `restartPolicy: ExitCode`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_restarts: u32,
    /// Share N GPUs out, one per task: the chief and workers in rank order, then the
    /// evaluator, round-robin, each with CUDA_VISIBLE_DEVICES naming its GPU (so its
    /// `--device cuda` is that GPU); ps tasks get none (CUDA_VISIBLE_DEVICES=""), they hold
    /// variables in host memory. The GPUs are the first N of the launcher's own
    /// CUDA_VISIBLE_DEVICES when it is set. Without --gpus tasks inherit the launcher's.
    #[arg(long, value_name = "N")]
    pub gpus: Option<usize>,
    /// Mutual TLS between the tasks: a new CA and a certificate per task (CN=worker:0,
    /// valid for --host) are written to DIR, and each task is given its own through
    /// ESTIMATOR_TLS_CERT, ESTIMATOR_TLS_KEY and ESTIMATOR_TLS_CA.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,
    /// The command every task runs, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl LaunchArgs {
    /// The tasks to start.
    pub fn roles(&self) -> Roles {
        Roles {
            chief: !self.no_chief,
            workers: self.workers,
            ps: self.ps,
            evaluator: self.evaluator,
        }
    }

    /// How long the other tasks may run on after the chief exited.
    pub fn grace(&self) -> Duration {
        Duration::from_secs(self.grace_secs)
    }

    /// The command, checked to be there.
    pub fn checked_command(&self) -> Result<&[OsString], LaunchError> {
        match self.command.first() {
            None => Err(LaunchError::NoCommand),
            Some(program) if program.is_empty() => Err(LaunchError::EmptyCommand),
            Some(_) => Ok(&self.command),
        }
    }
}

/// What parsing the command line gave.
pub enum Parsed {
    /// A command to run.
    Run(Cli),
    /// Help or version text, to print (`clap::Error::print`); exit 0.
    Print(clap::Error),
    /// A usage error: one line, exit [`USAGE`].
    Usage(String),
}

/// Parses `args` (the program name first); errors come out as one line.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Parsed {
    match Cli::try_parse_from(args) {
        Ok(cli) => Parsed::Run(cli),
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Parsed::Print(e),
            _ => Parsed::Usage(usage_line(&e.to_string())),
        },
    }
}

/// clap's error message (first line, without its `error: `) and where to look for help.
fn usage_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first} (see estimator-launch --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Parsed {
        parse(
            std::iter::once("estimator-launch")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    fn launch(args: &[&str]) -> LaunchArgs {
        match parsed(args) {
            Parsed::Run(Cli {
                command: None,
                launch,
            }) => launch,
            _ => panic!("{args:?} is not a launch"),
        }
    }

    #[test]
    fn launch_flags_and_the_command_after_the_separator() {
        let args = launch(&[
            "--workers",
            "3",
            "--ps",
            "1",
            "--evaluator",
            "--no-chief",
            "--grace-secs",
            "5",
            "--",
            "sh",
            "-c",
            "echo --workers",
        ]);
        assert_eq!(
            args.roles(),
            Roles {
                chief: false,
                workers: 3,
                ps: 1,
                evaluator: true
            }
        );
        assert_eq!(args.grace(), Duration::from_secs(5));
        assert_eq!(
            args.checked_command().unwrap(),
            ["sh", "-c", "echo --workers"]
        );
        let defaults = launch(&["--", "explain"]);
        assert_eq!(defaults.roles().workers, 1);
        assert!(defaults.roles().chief);
        assert_eq!(defaults.host, "127.0.0.1");
        assert_eq!(defaults.grace_secs, 90);
        assert_eq!(defaults.gpus, None);
        assert_eq!(launch(&["--gpus", "4", "--", "true"]).gpus, Some(4));
    }

    #[test]
    fn explain_is_a_subcommand() {
        match parsed(&["explain", "--model-dir", "/m"]) {
            Parsed::Run(Cli {
                command: Some(Command::Explain(args)),
                ..
            }) => assert_eq!(args.model_dir, Some(PathBuf::from("/m"))),
            _ => panic!("not explain"),
        }
    }

    #[test]
    fn usage_errors_are_one_line() {
        for args in [
            &["--workers", "two", "--", "true"][..],
            &["--gpus", "-1", "--", "true"],
            &["--bogus"],
            &["sh", "-c", "true"],
            &["--workers", "1", "explain"],
        ] {
            match parsed(args) {
                Parsed::Usage(line) => {
                    assert!(!line.contains('\n'), "{line}");
                    assert!(line.ends_with("(see estimator-launch --help)"), "{line}");
                }
                _ => panic!("{args:?} parsed"),
            }
        }
        let error = launch(&["--workers", "2"]).checked_command().unwrap_err();
        assert!(matches!(error, LaunchError::NoCommand));
        assert!(
            error.to_string().starts_with("no command to run"),
            "{error}"
        );
        assert_eq!(error.exit_code(), USAGE);
        assert!(matches!(parsed(&["--help"]), Parsed::Print(_)));
    }
}
