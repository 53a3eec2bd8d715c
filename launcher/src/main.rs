//! `estimator-launch`: start a local cluster — a chief, workers, parameter servers, an
//! evaluator — each task running the same command with its own TF_CONFIG, as TensorFlow and
//! Kubeflow's TFJob would; or explain what TF_CONFIG (or torchrun's, mpirun's or srun's
//! variables) make of this process.
//!
//! Run `estimator-launch --help` for the flags.

mod cli;
mod cpus;
mod error;
mod explain;
mod gpus;
mod layout;
mod ports;
mod relay;
#[cfg(unix)]
mod supervise;
mod tls;

use estimator_cluster::{
    cluster_source_from_env, cuda_visible_devices_from_env, omp_num_threads_text_from_env,
};

use crate::cli::{CertsArgs, Command, ExplainArgs, LaunchArgs, Parsed, USAGE};
use crate::gpus::GpuPlan;
use crate::layout::Layout;

fn main() {
    let code = match cli::parse(std::env::args_os()) {
        Parsed::Print(help) => {
            let _ = help.print();
            0
        }
        Parsed::Usage(line) => {
            error(&line);
            USAGE
        }
        Parsed::Run(cli) => match cli.command {
            Some(Command::Explain(args)) => explain(&args),
            Some(Command::Certs(args)) => certs(&args),
            None => launch(&cli.launch),
        },
    };
    std::process::exit(code);
}

fn error(message: &str) {
    relay::note(&format!("error: {}", message.replace('\n', " ")));
}

fn explain(args: &ExplainArgs) -> i32 {
    // The source alone: explaining must not wait for a rendezvous.
    match cluster_source_from_env() {
        Ok(source) => {
            let visible = cuda_visible_devices_from_env();
            let omp = omp_num_threads_text_from_env();
            let seen = explain::Seen {
                cuda_visible_devices: visible.as_deref(),
                omp_num_threads: omp.as_deref(),
                cores: cpus::available(),
            };
            let model_dir = args.model_dir.as_deref();
            let text = explain::render_source(&source, model_dir, seen, explain::resolve);
            relay::to_stdout(text.as_bytes());
            0
        }
        Err(e) => {
            error(&e.to_string());
            1
        }
    }
}

fn certs(args: &CertsArgs) -> i32 {
    match tls::issue_for(&args.tasks, &args.out) {
        Ok(files) => {
            for file in files {
                relay::to_stdout(format!("{}\n", file.display()).as_bytes());
            }
            0
        }
        Err(failure) => {
            error(&failure.to_string());
            failure.exit_code()
        }
    }
}

fn launch(args: &LaunchArgs) -> i32 {
    let command = match args.checked_command() {
        Ok(command) => command,
        Err(failure) => {
            error(&failure.to_string());
            return failure.exit_code();
        }
    };
    let roles = args.roles();
    if let Err(failure) = roles.validate() {
        error(&failure.to_string());
        return failure.exit_code();
    }
    let inherited = cuda_visible_devices_from_env();
    let gpus = match args
        .gpus
        .map(|count| GpuPlan::new(count, inherited.as_deref()))
        .transpose()
    {
        Ok(gpus) => gpus,
        Err(failure) => {
            error(&failure.to_string());
            return failure.exit_code();
        }
    };
    let ports = match ports::free_ports(&args.host, roles.tasks().len()) {
        Ok(ports) => ports,
        Err(e) => {
            error(&format!(
                "--host {}: cannot bind a port there: {e}",
                args.host
            ));
            return USAGE;
        }
    };
    let layout = Layout::new(roles, &args.host, &ports);
    let certificates = match &args.tls_dir {
        None => None,
        Some(dir) => match tls::TaskCertificates::issue(&layout, &args.host, dir) {
            Ok(certificates) => Some(certificates),
            Err(failure) => {
                error(&format!("--tls-dir {}: {failure}", dir.display()));
                return failure.exit_code();
            }
        },
    };
    run(&layout, command, args, gpus.as_ref(), certificates.as_ref())
}

#[cfg(unix)]
fn run(
    layout: &Layout,
    command: &[std::ffi::OsString],
    args: &LaunchArgs,
    gpus: Option<&GpuPlan>,
    certificates: Option<&tls::TaskCertificates>,
) -> i32 {
    let inherited = omp_num_threads_text_from_env();
    let cpu_threads = cpus::per_task(inherited.as_deref(), cpus::available(), &layout.cluster);
    let extras = supervise::Extras {
        gpus,
        certificates,
        cpu_threads: cpu_threads.as_deref(),
    };
    match supervise::launch(layout, command, args.grace(), args.max_restarts, extras) {
        Ok(code) => code,
        Err(failure) => {
            error(&failure.message);
            failure.code
        }
    }
}

#[cfg(not(unix))]
fn run(
    _: &Layout,
    _: &[std::ffi::OsString],
    _: &LaunchArgs,
    _: Option<&GpuPlan>,
    _: Option<&tls::TaskCertificates>,
) -> i32 {
    error("launching a cluster needs a Unix system (process groups); `explain` works anywhere");
    1
}
