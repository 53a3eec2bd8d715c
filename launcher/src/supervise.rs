//! Starting the tasks, relaying their output, waiting for the chief, and leaving no process
//! behind (the tasks' process group and its sentinel: `sentinel.rs`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use estimator_cluster::{Task, TF_CONFIG};

use crate::cpus::OMP_NUM_THREADS;
use crate::gpus::{GpuPlan, CUDA_VISIBLE_DEVICES};
use crate::layout::Layout;
use crate::relay::{self, note};
use crate::tls::TaskCertificates;

mod lost;
mod restart;
mod sentinel;
mod summary;
use lost::Blame;
use restart::{group_settled, restart_group, Restart};
use sentinel::Sentinel;
use summary::{Ending, Outcome};

/// Exit codes from this one up are worth a restart (Kubeflow's `ExitCode` policy).
const RETRYABLE: i32 = 128;

/// How often the tasks are polled for their exit.
const POLL: Duration = Duration::from_millis(20);
/// How long a killed process may take to be reaped, and the output relays to finish.
const SETTLE: Duration = Duration::from_secs(5);

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
            Ok(child) => tasks.push(Running {
                task,
                child,
                exit: None,
                restarts: 0,
                ending: Ending::Exited { signal: None },
            }),
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
    let code = supervise(&mut tasks, layout.chief(), grace, restart, &blame);
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

/// A task and, once it has exited, its exit code.
struct Running {
    task: Task,
    child: Child,
    exit: Option<i32>,
    /// Times it was started again.
    restarts: u32,
    /// How it ended (once `exit` is set).
    ending: Ending,
}

impl Running {
    /// Kills the task if it still runs and reaps it (SIGKILL through `Child::kill`).
    fn kill(&mut self) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return None;
        }
        let _ = self.child.kill();
        let status = reap(&mut self.child, SETTLE);
        self.exit = Some(status.map_or(1, exit_code));
        if status.is_none() {
            self.ending = Ending::NotReaped;
        }
        status
    }

    fn outcome(&self) -> Outcome {
        Outcome {
            task: self.task,
            code: self.exit.unwrap_or(1),
            restarts: self.restarts,
            ending: self.ending.clone(),
        }
    }
}

/// The first task to fail with a code no restart can fix (1–127): the job's failure.
#[derive(Debug, Clone)]
struct Cause {
    task: Task,
    code: i32,
}

/// Waits for the chief, gives the others `grace` to exit, kills those still running; returns
/// the chief's exit code — or, when the chief only lost a peer (≥ 128) after a task had failed
/// for good (1–127), that task's. Retryable exits are restarted per `restart` until a task
/// fails for good. Tasks left running once every other has exited, named lost by them (per
/// `blame`), are ended without waiting for the grace.
fn supervise(
    tasks: &mut [Running],
    chief: Task,
    grace: Duration,
    mut restart: Restart,
    blame: &Blame,
) -> i32 {
    let mut chief_code = None;
    let mut cause: Option<Cause> = None;
    // Failures seen after the cause, in the order seen: the tasks that lost it.
    let mut after_cause: Vec<String> = Vec::new();
    // Retryable exits of the group that restarts together, waiting for the group to settle.
    let mut held: Vec<(usize, ExitStatus, Instant)> = Vec::new();
    let mut deadline = None;
    loop {
        let now = Instant::now();
        for (i, running) in tasks.iter_mut().enumerate() {
            if running.exit.is_some() || held.iter().any(|(h, _, _)| *h == i) {
                continue;
            }
            let status = match running.child.try_wait() {
                Ok(None) => continue,
                Ok(Some(status)) => status,
                Err(e) => {
                    note(&format!("cannot wait for {}: {e}", running.task));
                    ExitStatus::from_raw(1 << 8)
                }
            };
            let code = exit_code(status);
            if (1..RETRYABLE).contains(&code) && cause.is_none() {
                record(running, status, chief, &mut chief_code, None);
                if restart.max > 0 {
                    note(&format!(
                        "the job has failed: codes 1 to {} are not retried, so no task will be \
                         restarted",
                        RETRYABLE - 1
                    ));
                }
                cause = Some(Cause {
                    task: running.task,
                    code,
                });
                continue;
            }
            let restartable = code >= RETRYABLE
                && running.restarts < restart.max
                && cause.is_none()
                && chief_code.is_none();
            if restartable && restart.together.contains(&running.task) {
                held.push((i, status, now));
                continue;
            }
            if restartable {
                running.restarts += 1;
                note(&format!(
                    "{} {}: restarting it ({} of {})",
                    running.task,
                    describe(status),
                    running.restarts,
                    restart.max
                ));
                match (restart.spawn)(running.task) {
                    Ok(child) => {
                        running.child = child;
                        continue;
                    }
                    Err(e) => note(&format!("cannot restart {}: {e}", running.task)),
                }
            }
            let later = cause.as_ref().map(|_| &mut after_cause);
            record(running, status, chief, &mut chief_code, later);
        }
        if cause.is_some() || chief_code.is_some() {
            for (i, status, _) in held.drain(..) {
                let later = cause.as_ref().map(|_| &mut after_cause);
                record(&mut tasks[i], status, chief, &mut chief_code, later);
            }
        } else if let Some(&(i, status, _)) = held
            .iter()
            .find(|(_, _, at)| group_settled(tasks, &held, &restart, now, *at))
        {
            restart_group(tasks, i, status, &mut restart);
            held.clear();
        }
        let left: Vec<usize> = (0..tasks.len())
            .filter(|&i| tasks[i].exit.is_none() && !held.iter().any(|(h, _, _)| *h == i))
            .collect();
        if left.is_empty() && held.is_empty() {
            break;
        }
        let lost = if held.is_empty() {
            lost::to_end(tasks, &left, blame)
        } else {
            Vec::new()
        };
        for (i, accusers) in lost {
            let names: Vec<String> = accusers.iter().map(Task::to_string).collect();
            let term_grace = lost::TERM_GRACE.min(grace);
            note(&format!(
                "ending {}: every other task has exited, and {} named it lost (SIGTERM, then \
                 SIGKILL after {} s)",
                tasks[i].task,
                names.join(" and "),
                term_grace.as_secs()
            ));
            let status = lost::end(&mut tasks[i], term_grace);
            let later = cause.as_ref().map(|_| &mut after_cause);
            match status {
                Some(status) => record(&mut tasks[i], status, chief, &mut chief_code, later),
                None => {
                    note(&format!(
                        "{} could not be reaped after the kill",
                        tasks[i].task
                    ));
                    tasks[i].exit = Some(1);
                    tasks[i].ending = Ending::NotReaped;
                    continue;
                }
            }
            tasks[i].ending = Ending::EndedAsLost(accusers);
        }
        if tasks.iter().all(|t| t.exit.is_some()) && held.is_empty() {
            break;
        }
        if chief_code.is_some() && deadline.is_none() {
            deadline = Some(Instant::now() + grace);
            note(&format!(
                "waiting up to {} s for {} other task{} to exit",
                grace.as_secs(),
                left.len(),
                if left.len() == 1 { "" } else { "s" }
            ));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            for i in left {
                note(&format!(
                    "killing {}: still running {} s after {chief} exited",
                    tasks[i].task,
                    grace.as_secs()
                ));
                let task = tasks[i].task;
                match tasks[i].kill() {
                    Some(status) => {
                        note(&format!("{task} {}", describe(status)));
                        tasks[i].ending = Ending::KilledAfterGrace(grace);
                    }
                    None => note(&format!("{task} could not be reaped after the kill")),
                }
            }
            break;
        }
        thread::sleep(POLL);
    }
    let (code, whose) = match (chief_code, cause) {
        (Some(code), cause) if code < RETRYABLE || cause.is_none() => {
            if let Some(cause) = cause.filter(|_| code != 0) {
                summarise(&cause, &after_cause);
            }
            (code, format!("{chief}'s"))
        }
        // The chief lost a peer that had failed for good: a restart would fail again.
        (_, Some(cause)) => {
            summarise(&cause, &after_cause);
            (cause.code, format!("{}'s, which failed first", cause.task))
        }
        (code, None) => (code.unwrap_or(1), format!("{chief}'s")),
    };
    let outcomes: Vec<Outcome> = tasks.iter().map(Running::outcome).collect();
    note(&summary::line(&outcomes, code, &whose));
    code
}

/// The launcher's last word on a job that failed for good: which task failed first, and
/// which failed after it (those that lost it, as a rule).
fn summarise(cause: &Cause, after_cause: &[String]) {
    let after = if after_cause.is_empty() {
        String::new()
    } else {
        format!("; after it: {}", after_cause.join(", "))
    };
    note(&format!(
        "the job failed: {} failed first, with code {}{after}",
        cause.task, cause.code
    ));
}

/// Notes that `running` exited with `status` for good; the chief's code goes to
/// `chief_code`, and a failure to `later` (the failures after the job's cause) when given.
fn record(
    running: &mut Running,
    status: ExitStatus,
    chief: Task,
    chief_code: &mut Option<i32>,
    later: Option<&mut Vec<String>>,
) {
    let code = exit_code(status);
    running.exit = Some(code);
    running.ending = Ending::Exited {
        signal: status.signal(),
    };
    if running.task == chief {
        *chief_code = Some(code);
    }
    if running.task == chief || code != 0 {
        note(&format!("{} {}", running.task, describe(status)));
    }
    if let Some(later) = later.filter(|_| code != 0) {
        later.push(format!("{} ({code})", running.task));
    }
}

/// Polls `child` until it has exited, for at most `limit`.
fn reap(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            _ => return None,
        }
    }
}

/// The exit code a shell would report: the code, or 128 + the signal that killed it.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

/// "exited with code 3", "exited with code 137 (killed by signal 9)".
fn describe(status: ExitStatus) -> String {
    match status.signal() {
        Some(signal) => format!(
            "exited with code {} (killed by signal {signal})",
            exit_code(status)
        ),
        None => format!("exited with code {}", exit_code(status)),
    }
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
