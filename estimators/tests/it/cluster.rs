//! `dnn-classifier` trained by a real multi-process cluster on loopback: launched by
//! `estimator-launch`, and by hand for the fault test (SIGKILL a worker, relaunch, resume).

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;
use estimator::cluster::SHARED_MEMORY;

use crate::cli::{iris_train_and_evaluate_args, train_on_iris};

/// Longest any cluster in these tests may run before it is killed and the test fails.
pub const LIMIT: Duration = Duration::from_secs(240);

pub fn dnn_classifier() -> &'static str {
    env!("CARGO_BIN_EXE_dnn-classifier")
}

/// The `estimator-launch` binary of this build. It is another package's binary, which Cargo
/// builds into the same directory as this package's binaries when the whole workspace is
/// tested (`cargo test --workspace`).
pub fn estimator_launch() -> PathBuf {
    let launcher = Path::new(dnn_classifier()).with_file_name("estimator-launch");
    assert!(
        launcher.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`",
        launcher.display()
    );
    launcher
}

/// Child processes killed (and reaped) when the test ends, however it ends.
pub struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `signal` (`-STOP`, `-CONT`, `-KILL`) to `pid`; whether the process was there.
pub fn signal(signal: &str, pid: u32) -> bool {
    Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .is_ok_and(|status| status.success())
}

/// The first line of `output` that starts with `prefix` and `dnn-classifier: error:` (the
/// prefix is `[task] ` in a launcher's output, empty in a task's own).
pub fn error_line(output: &str, prefix: &str) -> String {
    let start = format!("{prefix}dnn-classifier: error:");
    output
        .lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no '{start}' line:\n{output}"))
        .to_string()
}

/// Waits (up to [`LIMIT`]) for a checkpoint at or past `step` in `model_dir`; the panic
/// shows `log()`.
pub fn wait_for_checkpoint(model_dir: &Path, step: u64, log: impl Fn() -> String) {
    let manager = CheckpointManager::new(model_dir, None);
    let deadline = Instant::now() + LIMIT;
    while manager.latest_step().unwrap_or(None).unwrap_or(0) < step {
        assert!(
            Instant::now() < deadline,
            "no checkpoint at {step}:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `launcher` (an `estimator-launch` command, its arguments set) to its end, at most
/// `LIMIT`, with its output in files of `dir`, and checks it exited 0: (stdout, stderr).
pub fn run_launched(launcher: &mut Command, dir: &Path) -> (String, String) {
    let (stdout_path, stderr_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut launcher = launcher
        .env_remove("TF_CONFIG")
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let status = wait_until(&mut launcher, Instant::now() + LIMIT);
    let _reaper = Reaper(vec![launcher]);
    let stdout = std::fs::read_to_string(stdout_path).unwrap();
    let stderr = std::fs::read_to_string(stderr_path).unwrap();
    let status = status.unwrap_or_else(|| panic!("cluster still running; stderr:\n{stderr}"));
    assert_eq!(status.code(), Some(0), "stderr:\n{stderr}");
    (stdout, stderr)
}

/// The JSON line `task` printed, in a launcher's `stdout` (the panic shows `stderr`).
pub fn task_json(stdout: &str, task: &str, stderr: &str) -> serde_json::Value {
    let prefix = format!("[{task}] ");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no output from {task}; stderr:\n{stderr}"));
    serde_json::from_str(line).unwrap()
}

/// Waits for `child` at most until `deadline`.
pub fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn train_args(model_dir: &str, max_steps: u64) -> Vec<String> {
    let mut args = iris_train_and_evaluate_args(model_dir, "64", max_steps);
    args.extend(["--save-checkpoints-steps", "100"].map(String::from));
    args
}

#[test]
fn a_launched_cluster_trains_dnn_classifier_to_the_single_process_bar() {
    let dir = tempfile::tempdir().unwrap();
    // Every task gets its own model_dir (named after its task) so that what each wrote can
    // be checked: only the chief's may hold checkpoints and events.
    let base = dir.path().display().to_string();
    let model_dir = r#""$BASE/$(printf %s "$TF_CONFIG" | sed -E 's/.*"type":"([a-z]+)","index":([0-9]+).*/\1-\2/')""#;
    let args = train_args("MODEL_DIR", 1000).join(" ");
    let script = format!("exec \"$DNN\" {}", args.replace("MODEL_DIR", model_dir));
    let (stdout, stderr) = run_launched(
        Command::new(estimator_launch())
            .args([
                "--workers",
                "2",
                "--grace-secs",
                "60",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .env("BASE", &base)
            .env("DNN", dnn_classifier()),
        dir.path(),
    );
    for line in stderr.lines().filter(|l| l.contains("exited with code")) {
        assert!(
            line.ends_with("exited with code 0"),
            "a task failed: {line}\n{stderr}"
        );
    }
    assert!(
        !stderr.contains("killing"),
        "a task had to be killed:\n{stderr}"
    );

    let metrics = task_json(&stdout, "chief:0", &stderr);
    assert_eq!(metrics["global_step"], 1000);
    let accuracy = metrics["accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.90, "accuracy {accuracy}");
    for worker in ["worker:0", "worker:1"] {
        let json = task_json(&stdout, worker, &stderr);
        assert_eq!(json["global_step"], 1000, "{worker} ran in step");
    }

    let chief_dir = dir.path().join("chief-0");
    assert_eq!(
        CheckpointManager::new(&chief_dir, None)
            .latest_step()
            .unwrap(),
        Some(1000)
    );
    assert!(has_events(&chief_dir));
    // With no evaluator task, the chief evaluated the final model as one would: into the
    // eval directory, and through the exporters (latest and final by default).
    assert!(has_events(&chief_dir.join("eval")));
    for exporter in ["latest", "final"] {
        let versions = std::fs::read_dir(chief_dir.join("export").join(exporter))
            .unwrap_or_else(|e| panic!("no {exporter} export: {e}\n{stderr}"))
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .parse::<u64>()
                    .is_ok()
            });
        assert_eq!(versions.count(), 1, "{exporter}");
    }
    for worker in ["worker-0", "worker-1"] {
        let worker_dir = dir.path().join(worker);
        assert!(
            !worker_dir.exists() || std::fs::read_dir(&worker_dir).unwrap().next().is_none(),
            "{worker} wrote to its model_dir"
        );
    }
}

/// A chief and a worker launched on this machine train Iris for 100 steps, with a network
/// wide enough (4-1024-512-3, 2.1 MB of gradients) that its ring segments (133 KB) cross the
/// same-host lane through shared memory, unless `shared_memory` is off: the launcher's
/// stderr and the model section of the chief's last checkpoint.
fn two_tasks_of_a_wide_network(shared_memory: bool) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    // Exit 0 also means the worker's final weights had the chief's CRC.
    let (_, stderr) = run_launched(
        Command::new(estimator_launch())
            .args(["--workers", "1", "--grace-secs", "60", "--"])
            .arg(dnn_classifier())
            .args(train_on_iris())
            .args(["--hidden-units", "1024,512", "--batch-size", "64"])
            .args(["--max-steps", "100", "--intra-op-threads", "1"])
            .arg("--model-dir")
            .arg(&model_dir)
            .env(SHARED_MEMORY, if shared_memory { "1" } else { "0" }),
        dir.path(),
    );
    let (_, checkpoint) = CheckpointManager::new(&model_dir, None)
        .latest()
        .unwrap()
        .expect("a checkpoint");
    (stderr, checkpoint.section("model").unwrap().to_vec())
}

#[test]
fn tasks_on_one_machine_train_through_shared_memory_to_the_bits_of_the_socket() {
    let (stderr, through_memory) = two_tasks_of_a_wide_network(true);
    assert!(stderr.contains("with shared memory to [1]"), "{stderr}");
    let (stderr, through_socket) = two_tasks_of_a_wide_network(false);
    assert!(stderr.contains("with shared memory to []"), "{stderr}");
    assert!(
        through_memory == through_socket,
        "the chief's weights differ with and without shared memory"
    );
}

#[test]
fn replicas_with_batch_normalisation_end_identical() {
    // Each replica's forward pass moves its own running statistics; kept at their mean
    // every step, the worker's final weights (running statistics included) have the
    // chief's CRC, or it exits 1.
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr) = run_launched(
        Command::new(estimator_launch())
            .args(["--workers", "1", "--grace-secs", "60", "--"])
            .arg(dnn_classifier())
            .args(train_on_iris())
            .args(["--hidden-units", "16,8"])
            .args(["--batch-norm", "--batch-size", "16", "--max-steps", "60"])
            .arg("--model-dir")
            .arg(dir.path().join("model")),
        dir.path(),
    );
    assert!(
        stderr.contains("chief:0 exited 0, worker:0 exited 0"),
        "{stderr}"
    );
}

fn has_events(model_dir: &Path) -> bool {
    std::fs::read_dir(model_dir).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("tfevents")
    })
}

/// `N` ports free on 127.0.0.1 now, all different: every listener is held until all are
/// bound (one at a time, the kernel may hand the same port out twice).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [TcpListener; N] =
        std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

/// A chief and one worker started by hand, sharing `model_dir` as a cluster volume would.
struct Cluster {
    reaper: Reaper,
    logs: PathBuf,
}

impl Cluster {
    fn start(model_dir: &Path, logs: &Path, max_steps: u64, round: usize) -> Cluster {
        let [chief, worker] = free_ports();
        let cluster = format!(
            r#""cluster": {{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{worker}"]}}"#
        );
        let children = ["chief", "worker"]
            .iter()
            .map(|kind| {
                let tf_config =
                    format!(r#"{{{cluster}, "task": {{"type": "{kind}", "index": 0}}}}"#);
                let log = |stream: &str| {
                    File::create(logs.join(format!("{kind}-{round}.{stream}"))).unwrap()
                };
                Command::new(dnn_classifier())
                    .args(train_args(model_dir.to_str().unwrap(), max_steps))
                    .env("TF_CONFIG", tf_config)
                    .stdin(Stdio::null())
                    .stdout(log("out"))
                    .stderr(log("err"))
                    .spawn()
                    .unwrap()
            })
            .collect();
        Cluster {
            reaper: Reaper(children),
            logs: logs.to_path_buf(),
        }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.logs.join(name)).unwrap_or_default()
    }
}

#[test]
fn a_killed_worker_stops_the_chief_with_a_retryable_code_and_a_relaunch_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let manager = CheckpointManager::new(&model_dir, None);

    let mut cluster = Cluster::start(&model_dir, dir.path(), 1_000_000, 1);
    wait_for_checkpoint(&model_dir, 200, || cluster.log("chief-1.err"));
    cluster.reaper.0[1].kill().unwrap();
    let killed_at = Instant::now();
    let status = wait_until(
        &mut cluster.reaper.0[0],
        killed_at + Duration::from_secs(60),
    )
    .expect("the chief exits within the peer timeout");
    let chief_err = cluster.log("chief-1.err");
    let code = status.code().expect("the chief exited by itself");
    assert!(code >= 128, "exit code {code}:\n{chief_err}");
    let error_line = error_line(&chief_err, "");
    assert!(error_line.contains("worker:0"), "{error_line}\n{chief_err}");
    drop(cluster);

    let saved = manager.latest_step().unwrap().expect("a checkpoint");
    let target = saved + 100;
    let mut cluster = Cluster::start(&model_dir, dir.path(), target, 2);
    let deadline = Instant::now() + LIMIT;
    for (index, task) in ["chief", "worker"].iter().enumerate() {
        let status = wait_until(&mut cluster.reaper.0[index], deadline)
            .unwrap_or_else(|| panic!("{task} still running"));
        assert!(
            status.success(),
            "{task}: {status}\n{}",
            cluster.log(&format!("{task}-2.err"))
        );
    }
    let chief_err = cluster.log("chief-2.err");
    assert!(
        chief_err.contains(&format!("(global_step {saved})")),
        "resumed from {saved}:\n{chief_err}"
    );
    assert_eq!(manager.latest_step().unwrap(), Some(target));
}
