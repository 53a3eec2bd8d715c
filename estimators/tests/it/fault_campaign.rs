//! The fault campaign: a real cluster under `estimator-launch --max-restarts` loses a
//! random task (chief, worker, ps or evaluator; SIGKILL, or SIGTERM, which a training task
//! answers with a checkpoint before it exits) at a random moment, or has a synchronous
//! parameter-server worker stopped (SIGSTOP) past the peer timeout and then continued,
//! trial after trial. Each trial must end with the launcher's exit 0, the final checkpoint at
//! exactly max_steps, every checkpoint on disk readable, the evaluator's last evaluation at
//! max_steps (ps clusters run one), no task left running, and — where training is
//! deterministic (MultiWorkerMirrored) — the same final weights as an uninterrupted run.
//!
//! The suite runs a small seeded sample; `scripts/fault-campaign TRIALS SEED` runs more
//! (`FAULT_TRIALS`, `FAULT_SEED`) and prints the tally.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;
use estimator::datasets::SplitMix64;

use crate::cli::iris;
use crate::cluster::{signal, LIMIT};
use crate::ps_cluster::{train_args, Launched};

const MAX_STEPS: u64 = 2000;

/// What happens to the victim.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Kill,
    /// SIGTERM: a pod evicted.
    Terminate,
    /// SIGSTOP for this long, then SIGCONT.
    Stop(Duration),
}

/// Peer timeout of every trial, in seconds.
const PEER_TIMEOUT_SECS: &str = "5";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    MultiWorkerMirrored,
    SyncPs,
    AsyncPs,
}

impl Mode {
    fn tasks(self) -> &'static [&'static str] {
        match self {
            Mode::MultiWorkerMirrored => &["chief:0", "worker:0"],
            Mode::SyncPs => &["chief:0", "worker:0", "ps:0", "ps:1", "evaluator:0"],
            Mode::AsyncPs => &["chief:0", "worker:0", "ps:0", "evaluator:0"],
        }
    }

    fn launcher_args(self) -> Vec<&'static str> {
        let mut args = vec![
            "--workers",
            "1",
            "--max-restarts",
            "3",
            "--grace-secs",
            "15",
        ];
        // Two ps tasks in synchronous mode: an update can then reach one and not the other.
        match self {
            Mode::SyncPs => args.extend(["--ps", "2", "--evaluator"]),
            Mode::AsyncPs => args.extend(["--ps", "1", "--evaluator"]),
            Mode::MultiWorkerMirrored => {}
        }
        args
    }

    /// Whether the cluster has ps tasks and an evaluator (and runs `train-and-evaluate`).
    fn evaluates(self) -> bool {
        self != Mode::MultiWorkerMirrored
    }

    fn train_extra(self) -> Vec<&'static str> {
        let mut extra = vec!["--peer-timeout-secs", PEER_TIMEOUT_SECS];
        match self {
            // Every weight in blocks over both ps tasks: blocks of one variable can part too.
            Mode::SyncPs => extra.extend(["--ps-mode", "sync", "--ps-min-shard-bytes", "64"]),
            Mode::AsyncPs => extra.extend(["--ps-mode", "async"]),
            Mode::MultiWorkerMirrored => {}
        }
        extra
    }
}

/// Runs `mode` to MAX_STEPS in `dir`, striking `victim` with the fault `after` the first
/// checkpoint when given; the final checkpoint's weights, or why the trial failed.
fn run(dir: &Path, mode: Mode, victim: Option<(&str, Fault, Duration)>) -> Result<Vec<u8>, String> {
    let model_dir = dir.join("model");
    let (train, eval) = (iris("iris_train.csv"), iris("iris_test.csv"));
    let mut extra = vec!["--train", &train];
    extra.extend(mode.train_extra());
    if mode.evaluates() {
        extra.extend(["--eval", &eval]);
    }
    let steps = MAX_STEPS.to_string();
    let mut args = train_args(model_dir.to_str().unwrap(), &steps, &extra);
    if mode.evaluates() {
        args[0] = "train-and-evaluate";
    }
    let mut cluster = Launched::start(dir, &mode.launcher_args(), &args);
    let mut killed = true;
    if let Some((task, fault, after)) = victim {
        cluster.wait_for_checkpoint(&model_dir, 1);
        std::thread::sleep(after);
        let pid = cluster.pid(task);
        killed = match fault {
            Fault::Kill => signal("-KILL", pid),
            Fault::Terminate => signal("-TERM", pid),
            Fault::Stop(stopped) => {
                let stopped_ok = signal("-STOP", pid);
                std::thread::sleep(stopped);
                signal("-CONT", pid) && stopped_ok
            }
        };
    }
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    let fail = |why: String| Err(format!("{why}\n{stderr}"));
    if code != 0 {
        return fail(format!("launcher exited {code}"));
    }
    if let (Some((task, _, _)), false) = (victim, killed) {
        return fail(format!("{task} had exited before it could be killed"));
    }
    let manager = CheckpointManager::new(&model_dir, None);
    if manager.latest_step().ok().flatten() != Some(MAX_STEPS) {
        return fail(format!("latest checkpoint {:?}", manager.latest_step()));
    }
    let mut last = Vec::new();
    for path in manager.list().map_err(|e| e.to_string())? {
        match manager.load(&path) {
            Ok(checkpoint) => last = checkpoint.section("model").unwrap_or_default().to_vec(),
            Err(e) => return fail(format!("{} does not load: {e}", path.display())),
        }
    }
    if mode.evaluates() {
        let last = std::fs::read_to_string(dir.join("stdout"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("[evaluator:0] "))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|json| json["global_step"].as_u64())
            .next_back();
        if last != Some(MAX_STEPS) {
            return fail(format!(
                "the evaluator's last evaluation is at step {last:?}"
            ));
        }
    }
    if let Some(pid) = left_running(&model_dir) {
        return fail(format!("pid {pid} still runs on {}", model_dir.display()));
    }
    Ok(last)
}

/// A process whose command line names `model_dir`, if any is left.
fn left_running(model_dir: &Path) -> Option<String> {
    let output = Command::new("pgrep")
        .args(["-f", model_dir.to_str().unwrap()])
        .output()
        .ok()?;
    let pids = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (!pids.is_empty()).then_some(pids)
}

/// Runs `trials` seeded trials; the tally, with a line per failure.
fn campaign(trials: usize, seed: u64) -> (usize, Vec<String>) {
    let mut rng = SplitMix64::new(seed);
    let modes = [Mode::MultiWorkerMirrored, Mode::SyncPs, Mode::AsyncPs];
    let reference_dir = tempfile::tempdir().unwrap();
    let reference =
        run(reference_dir.path(), Mode::MultiWorkerMirrored, None).expect("an uninterrupted run");
    let mut failures = Vec::new();
    for trial in 0..trials {
        let mode = modes[rng.below(modes.len())];
        let mut victim = mode.tasks()[rng.below(mode.tasks().len())];
        let after = Duration::from_millis(rng.below(1500) as u64);
        // One synchronous trial in two stops its worker past the peer timeout instead.
        let fault = if mode == Mode::SyncPs && rng.below(2) == 0 {
            victim = "worker:0";
            stopped_past_the_peer_timeout()
        } else if rng.below(2) == 0 {
            Fault::Terminate
        } else {
            Fault::Kill
        };
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let outcome = run(dir.path(), mode, Some((victim, fault, after))).and_then(|weights| {
            match mode == Mode::MultiWorkerMirrored && weights != reference {
                true => Err("final weights differ from the uninterrupted run's".into()),
                false => Ok(()),
            }
        });
        let verdict = match &outcome {
            Ok(()) => "ok".to_string(),
            Err(why) => {
                failures.push(format!(
                    "trial {trial} ({mode:?}, {fault:?} {victim}, {after:?}): {why}"
                ));
                "FAILED".to_string()
            }
        };
        println!(
            "trial {trial}: {mode:?}, {fault:?} {victim} {after:?} after the first checkpoint: \
             {verdict} in {:.1?}",
            started.elapsed()
        );
    }
    (trials - failures.len(), failures)
}

/// A stop long enough for the other tasks to give the stopped one up.
fn stopped_past_the_peer_timeout() -> Fault {
    let timeout: u64 = PEER_TIMEOUT_SECS.parse().unwrap();
    Fault::Stop(Duration::from_secs(timeout * 2 + 2))
}

#[test]
fn a_synchronous_ps_worker_stopped_past_the_peer_timeout_still_ends_at_max_steps() {
    let dir = tempfile::tempdir().unwrap();
    let fault = stopped_past_the_peer_timeout();
    let victim = ("worker:0", fault, Duration::ZERO);
    if let Err(why) = run(dir.path(), Mode::SyncPs, Some(victim)) {
        panic!("{why}");
    }
}

#[test]
fn killed_tasks_at_random_moments_are_recovered_exactly() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (trials, seed) = (env("FAULT_TRIALS", 2) as usize, env("FAULT_SEED", 11));
    let started = Instant::now();
    let (passed, failures) = campaign(trials, seed);
    println!(
        "fault campaign (seed {seed}): {passed}/{trials} trials recovered exactly in {:.0?}",
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
