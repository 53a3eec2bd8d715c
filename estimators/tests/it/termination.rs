//! SIGTERM (a pod being evicted) and SIGINT stop `dnn-classifier` after the step under way,
//! with the chief's checkpoint at that step, and an exit code a restart policy retries:
//! alone, and as the worker of a launched cluster, which stops with it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;

use crate::cli::iris;
use crate::cluster::{dnn_classifier, signal, wait_until, Reaper, LIMIT};
use crate::ps_cluster::{train_args, Launched};

/// How the error line of a task that received SIGTERM and saved the checkpoint ends.
const SAVED_HERE: &str =
    "this task received SIGTERM; the chief saved a checkpoint there, run the job again to resume \
     from it";

/// Training that runs until signalled: no checkpoint is due before a million steps.
fn until_signalled(model_dir: &Path) -> Vec<String> {
    let model_dir = model_dir.to_str().unwrap();
    let mut args: Vec<String> = train_args(model_dir, "100000000", &[])
        .into_iter()
        .map(String::from)
        .collect();
    let every = args
        .iter()
        .position(|a| a == "--save-checkpoints-steps")
        .unwrap();
    args[every + 1] = "1000000".into();
    args.extend(["--train".into(), iris("iris_train.csv")]);
    args
}

/// A cluster launched with `launcher` flags, training with `extra` flags until signalled,
/// past its first logged loss; its model directory.
fn training_cluster(dir: &Path, launcher: &[&str], extra: &[&str]) -> (Launched, PathBuf) {
    let model_dir = dir.join("model");
    let mut args = until_signalled(&model_dir);
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cluster = Launched::start(dir, launcher, &args);
    wait_for_log("loss = ", || cluster.stderr());
    (cluster, model_dir)
}

/// The step of the latest checkpoint in `model_dir`.
fn latest_step(model_dir: &Path) -> Option<u64> {
    CheckpointManager::new(model_dir, None)
        .latest_step()
        .unwrap()
}

/// The step a task said it stopped after, from its log.
fn stopped_after(log: &str, prefix: &str) -> u64 {
    let line = log
        .lines()
        .filter(|l| l.starts_with(prefix))
        .find_map(|l| {
            l.split_once("stopping after global_step ")
                .map(|(_, rest)| rest)
        })
        .unwrap_or_else(|| panic!("no 'stopping after' line from '{prefix}':\n{log}"));
    line.split(':').next().unwrap().parse().unwrap()
}

/// The step of an error line `training stopped at global_step N: …`.
fn error_step(line: &str) -> u64 {
    line.split("global_step ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no step in: {line}"))
}

/// Waits until `log()` shows `needle`, within [`LIMIT`].
fn wait_for_log(needle: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + LIMIT;
    while !log().contains(needle) {
        assert!(Instant::now() < deadline, "no '{needle}' in:\n{}", log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_saves_the_step_reached_exits_143_and_a_rerun_resumes_there() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let log = dir.path().join("stderr");
    let child = Command::new(dnn_classifier())
        .args(until_signalled(&model_dir))
        .env_remove("TF_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut reaper = Reaper(vec![child]);
    let read_log = || std::fs::read_to_string(&log).unwrap();
    wait_for_log("loss = ", read_log);
    assert!(signal("-TERM", reaper.0[0].id()));
    let status = wait_until(&mut reaper.0[0], Instant::now() + LIMIT)
        .unwrap_or_else(|| panic!("still running after SIGTERM:\n{}", read_log()));
    let stderr = read_log();
    assert_eq!(status.code(), Some(143), "{stderr}");
    let step = stopped_after(&stderr, "");
    assert!(step >= 100, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "dnn-classifier: error: training stopped at global_step {step}: this task received \
             SIGTERM; the chief saved a checkpoint there"
        )),
        "{stderr}"
    );
    assert_eq!(latest_step(&model_dir), Some(step), "{stderr}");

    // Run again: it resumes from that checkpoint and finishes.
    let mut args = until_signalled(&model_dir);
    let max = args.iter().position(|a| a == "--max-steps").unwrap();
    args[max + 1] = (step + 50).to_string();
    let rerun = Command::new(dnn_classifier())
        .args(&args)
        .env_remove("TF_CONFIG")
        .output()
        .unwrap();
    let rerun_log = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{rerun_log}");
    assert!(
        rerun_log.contains(&format!("(global_step {step})")),
        "{rerun_log}"
    );
    assert_eq!(latest_step(&model_dir), Some(step + 50));
}

#[test]
fn a_worker_told_to_terminate_stops_the_cluster_at_one_step_with_the_chiefs_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (mut cluster, model_dir) = training_cluster(dir.path(), &["--workers", "1"], &[]);
    assert!(signal("-TERM", cluster.pid("worker:0")));
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    // The launcher exits with the chief's code: retryable, as the worker's own.
    assert_eq!(code, 128, "{stderr}");
    assert!(stderr.contains("worker:0 exited with code 143"), "{stderr}");
    let step = stopped_after(&stderr, "[worker:0] ");
    assert_eq!(stopped_after(&stderr, "[chief:0] "), step, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "[chief:0] dnn-classifier: error: training stopped at global_step {step}: another \
             replica was asked to terminate"
        )),
        "{stderr}"
    );
    assert_eq!(latest_step(&model_dir), Some(step), "{stderr}");
}

#[test]
fn a_second_sigterm_ends_a_task_that_cannot_finish_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = ["--workers", "1", "--grace-secs", "5"];
    let (mut cluster, _) = training_cluster(dir.path(), &launcher, &["--peer-timeout-secs", "120"]);
    // A stopped worker holds the chief in the step's all-reduce.
    let (chief, worker) = (cluster.pid("chief:0"), cluster.pid("worker:0"));
    assert!(signal("-STOP", worker));
    std::thread::sleep(Duration::from_millis(300));
    assert!(signal("-TERM", chief));
    std::thread::sleep(Duration::from_millis(500));
    assert!(signal("-0", chief), "the first SIGTERM waits for the step");
    assert!(signal("-TERM", chief));
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    signal("-KILL", worker);
    assert!(
        stderr.contains("chief:0 exited with code 143 (killed by signal 15)"),
        "{stderr}"
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(!stderr.contains("stopping after"), "{stderr}");
}

#[test]
fn a_parameter_server_chief_told_to_terminate_saves_and_the_others_lose_it_as_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = ["--workers", "1", "--ps", "1", "--grace-secs", "60"];
    let (mut cluster, model_dir) =
        training_cluster(dir.path(), &launcher, &["--peer-timeout-secs", "3"]);
    assert!(signal("-TERM", cluster.pid("chief:0")));
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    assert_eq!(code, 143, "{stderr}");
    // Not told that training ended, the others fail as a restart policy retries.
    for task in ["worker:0", "ps:0"] {
        assert!(
            stderr.contains(&format!("{task} exited with code 128")),
            "{stderr}"
        );
    }
    let line = crate::cluster::error_line(&stderr, "[chief:0] ");
    let step = error_step(&line);
    assert!(line.ends_with(SAVED_HERE), "{line}");
    assert_eq!(latest_step(&model_dir), Some(step), "{stderr}");
}

#[test]
fn ctrl_c_to_the_launcher_stops_the_training_tasks_first_then_the_parameter_servers() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = ["--workers", "1", "--ps", "1", "--grace-secs", "60"];
    let (mut cluster, model_dir) = training_cluster(dir.path(), &launcher, &[]);
    assert!(signal("-INT", cluster.launcher_pid()));
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    assert_eq!(code, 143, "{stderr}");
    assert!(
        stderr.contains("estimator-launch: SIGINT: passing it on to every task as SIGTERM"),
        "{stderr}"
    );
    let chief = crate::cluster::error_line(&stderr, "[chief:0] ");
    assert!(chief.ends_with(SAVED_HERE), "{stderr}");
    let step = error_step(&chief);
    assert_eq!(latest_step(&model_dir), Some(step), "{stderr}");
    assert!(stderr.contains("worker:0 exited with code 143"), "{stderr}");
    // The ps task is told last, once both training tasks are gone, and goes as its signal
    // says.
    let exit = |task: &str| {
        stderr
            .find(&format!("estimator-launch: {task} exited with code"))
            .unwrap_or_else(|| panic!("no exit of {task}:\n{stderr}"))
    };
    assert!(
        exit("ps:0") > exit("chief:0").max(exit("worker:0")),
        "{stderr}"
    );
    assert!(stderr.contains("ps:0 exited with code 143"), "{stderr}");
    assert!(!stderr.contains("killing"), "{stderr}");
}
