//! Starting the tasks, relaying their output, waiting for the chief, and leaving no process
//! behind (the tasks' process group and its sentinel: `sentinel.rs`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use estimator_cluster::{Task, TF_CONFIG};

use crate::cpus::OMP_NUM_THREADS;
use crate::gpus::{GpuPlan, CUDA_VISIBLE_DEVICES};
use crate::layout::Layout;
use crate::relay::{self, note};
use crate::tls::TaskCertificates;

mod lost;
mod restart;
mod running;
mod sentinel;
mod stop_signal;
mod summary;
mod watch;
use lost::Blame;
use restart::Restart;
use running::{Running, SETTLE};
use sentinel::Sentinel;
use stop_signal::StopSignal;
use watch::supervise;

/// A launch that could not start: the one-line message and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong.
    pub message: String,
    /// The launcher's exit code: 127 for a command not found, 126 for one that cannot run.
    pub code: i32,
}

/// What each task is given besides its TF_CONFIG.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras<'a> {
    /// Its GPU.
    pub gpus: Option<&'a GpuPlan>,
    /// Its TLS certificate.
    pub certificates: Option<&'a TaskCertificates>,
    /// Its `OMP_NUM_THREADS`: its share of the machine's cores.
    pub cpu_threads: Option<&'a str>,
}

/// Starts every task of `layout` running `command` with its TF_CONFIG (and its GPU and
/// certificate, with `extras`), relays their output, and returns the chief's exit code once
/// every task has exited or been killed.
pub fn launch(
    layout: &Layout,
    command: &[OsString],
    grace: Duration,
    max_restarts: u32,
    extras: Extras<'_>,
) -> Result<i32, Failure> {
    let Extras {
        gpus,
        certificates,
        cpu_threads,
    } = extras;
    let sentinel = match Sentinel::start() {
        Ok(sentinel) => Some(sentinel),
        Err(e) => {
            note(&format!(
                "warning: cannot start /bin/sh to clean up after the tasks ({e}); tasks may \
                 outlive a launcher that is killed"
            ));
            None
        }
    };
    // Watched before any task starts, so that a Ctrl-C meanwhile reaches them too.
    let stop = StopSignal::watch()
        .map_err(|e| {
            note(&format!(
                "warning: cannot watch for Ctrl-C and SIGTERM ({e})"
            ))
        })
        .ok();
    let (relays_alive, relays_done) = mpsc::channel::<()>();
    let group = sentinel.as_ref().map(Sentinel::group);
    let blame = Blame::default();
    // Each task's incarnation, as `Running::restarts` counts them: a line heard from an
    // earlier one names no one in the current one.
    let mut incarnations: HashMap<Task, u32> = HashMap::new();
    let mut spawn = |task: Task| -> io::Result<Child> {
        let incarnation = {
            let next = incarnations.entry(task).or_insert(0);
            *next += 1;
            *next - 1
        };
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .env(TF_CONFIG, layout.tf_config(task))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(group) = group {
            cmd.process_group(group);
        }
        if let Some(certificates) = certificates {
            cmd.envs(certificates.env(task));
        }
        if let Some(threads) = cpu_threads {
            cmd.env(OMP_NUM_THREADS, threads);
        }
        let visible = gpus.map(|plan| plan.visible(&layout.cluster, task));
        if let Some(visible) = &visible {
            cmd.env(CUDA_VISIBLE_DEVICES, visible);
        }
        let mut child = cmd.spawn()?;
        let gpu = match visible.as_deref() {
            None => String::new(),
            Some("") => format!(" with no GPU ({CUDA_VISIBLE_DEVICES}=\"\")"),
            Some(id) => format!(" with GPU {id} ({CUDA_VISIBLE_DEVICES}={id})"),
        };
        let threads = cpu_threads.map_or(String::new(), |n| {
            format!(", up to {n} CPU thread(s) per operation ({OMP_NUM_THREADS}={n})")
        });
        note(&format!(
            "started {task} (pid {}) on {}{gpu}{threads}",
            child.id(),
            layout.address(task)
        ));
        let prefix = format!("[{task}] ");
        if let Some(out) = child.stdout.take() {
            spawn_relay(out, prefix.clone(), relay::to_stdout, relays_alive.clone());
        }
        if let Some(err) = child.stderr.take() {
            let (blame, tasks) = (blame.clone(), layout.tasks.clone());
            let hear = move |line: &[u8]| {
                blame.hear(task, incarnation, line, &tasks);
                relay::to_stderr(line);
            };
            spawn_relay(err, prefix, hear, relays_alive.clone());
        }
        Ok(child)
    };
    let mut tasks: Vec<Running> = Vec::with_capacity(layout.tasks.len());
    for &task in &layout.tasks {
        match spawn(task) {
            Ok(child) => tasks.push(Running::started(task, child)),
            Err(e) => {
                for running in tasks.iter_mut() {
                    running.kill();
                }
                finish(sentinel, relays_alive, relays_done);
                return Err(spawn_failure(&command[0], &e));
            }
        }
    }
    // Synchronous replicas (no ps tasks) restart together: a replica restarted alone can
    // pair with peers that are about to fail too, and the incarnations can chase each other
    // until the restarts run out.
    let together = if layout.cluster.ps.is_empty() {
        layout.cluster.training_tasks()
    } else {
        Vec::new()
    };
    let restart = Restart {
        max: max_restarts,
        spawn: &mut spawn,
        together,
    };
    let code = supervise(
        &mut tasks,
        layout.chief(),
        grace,
        restart,
        &blame,
        stop.as_ref(),
    );
    finish(sentinel, relays_alive, relays_done);
    Ok(code)
}

/// Sweeps the process group, then lets the relays print what is left in the pipes.
fn finish(sentinel: Option<Sentinel>, relays_alive: mpsc::Sender<()>, relays: mpsc::Receiver<()>) {
    if let Some(sentinel) = sentinel {
        sentinel.sweep();
    }
    drop(relays_alive);
    // Every relay holds a sender: the channel disconnects when the last one has finished.
    let _ = relays.recv_timeout(SETTLE);
}

fn spawn_failure(program: &OsString, e: &io::Error) -> Failure {
    let program = program.to_string_lossy();
    match e.kind() {
        io::ErrorKind::NotFound => Failure {
            message: format!("cannot run '{program}': command not found"),
            code: 127,
        },
        io::ErrorKind::PermissionDenied => Failure {
            message: format!("cannot run '{program}': permission denied"),
            code: 126,
        },
        _ => Failure {
            message: format!("cannot run '{program}': {e}"),
            code: 126,
        },
    }
}

fn spawn_relay(
    source: impl Read + Send + 'static,
    prefix: String,
    emit: impl FnMut(&[u8]) + Send + 'static,
    alive: mpsc::Sender<()>,
) {
    thread::spawn(move || {
        relay::relay_lines(source, &prefix, emit);
        drop(alive);
    });
}

#[cfg(test)]
mod tests;
