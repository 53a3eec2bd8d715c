//! A frozen task (SIGSTOP) in a four-task MultiWorkerMirrored cluster: the chief warns
//! which task has not arrived once the stall warning passes, and every other task then
//! exits with a retryable code naming that same task, whatever its place in the ring; a
//! task that resumes within the timeout is a stall in the summaries, not a failure.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;
use estimator::summary::{event_files, read_event_file, EventKind, Value};

use crate::cli::train_on_iris;
use crate::cluster::{
    dnn_classifier, error_line, free_ports, signal, wait_for_checkpoint, wait_until, Reaper, LIMIT,
};

const TASKS: [&str; 4] = ["chief:0", "worker:0", "worker:1", "worker:2"];

fn start(model_dir: &Path, logs: &Path) -> Reaper {
    let ports: [u16; TASKS.len()] = free_ports();
    let address = |i: usize| format!("\"127.0.0.1:{}\"", ports[i]);
    let cluster = format!(
        r#""cluster": {{"chief": [{}], "worker": [{}, {}, {}]}}"#,
        address(0),
        address(1),
        address(2),
        address(3)
    );
    let children = TASKS
        .iter()
        .map(|task| {
            let (kind, index) = task.split_once(':').unwrap();
            let tf_config =
                format!(r#"{{{cluster}, "task": {{"type": "{kind}", "index": {index}}}}}"#);
            let log = File::create(logs.join(format!("{task}.err"))).unwrap();
            Command::new(dnn_classifier())
                .args(train_on_iris())
                .args(["--max-steps", "100000000"])
                .args(["--save-checkpoints-steps", "50", "--hidden-units", "16"])
                .args(["--peer-timeout-secs", "10", "--stall-warning-secs", "3"])
                .arg("--model-dir")
                .arg(model_dir)
                .env("TF_CONFIG", tf_config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap()
        })
        .collect();
    Reaper(children)
}

fn log(logs: &Path, task: &str) -> String {
    std::fs::read_to_string(logs.join(format!("{task}.err"))).unwrap_or_default()
}

#[test]
fn a_stopped_worker_is_named_by_the_chief_s_stall_warning_and_by_every_task_s_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (model_dir, logs) = (dir.path().join("model"), dir.path());
    let mut cluster = start(&model_dir, logs);
    wait_for_checkpoint(&model_dir, 100, || log(logs, "chief:0"));
    // Stop worker:1, in the middle of the ring.
    let stopped = TASKS[2];
    assert!(signal("-STOP", cluster.0[2].id()));
    let stopped_at = Instant::now();
    let warned = loop {
        let chief = log(logs, "chief:0");
        if let Some(line) = chief.lines().find(|l| l.contains("stalled")) {
            break line.to_string();
        }
        assert!(
            stopped_at.elapsed() < Duration::from_secs(5),
            "no stall warning within 5 s:\n{chief}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(warned.contains(stopped), "{warned}");
    println!("after {:.1?}: {warned}", stopped_at.elapsed());
    for (i, task) in TASKS.iter().enumerate().filter(|(i, _)| *i != 2) {
        let status = wait_until(&mut cluster.0[i], stopped_at + Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{task} still running 20 s after the stop"));
        let err = log(logs, task);
        let code = status.code().expect("exited by itself");
        assert!(code >= 128, "{task} exited {code}:\n{err}");
        let error_line = error_line(&err, "");
        assert!(
            error_line.contains(stopped),
            "{task} blamed another task: {error_line}"
        );
        println!("{task} after {:.1?}: {error_line}", stopped_at.elapsed());
    }
    assert!(signal("-KILL", cluster.0[2].id()));
}

#[test]
fn a_worker_stopped_shorter_than_the_timeout_is_recorded_as_a_stall_and_training_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (model_dir, logs) = (dir.path().join("model"), dir.path());
    let mut cluster = start(&model_dir, logs);
    let manager = CheckpointManager::new(&model_dir, None);
    let step = || manager.latest_step().unwrap_or(None).unwrap_or(0);
    wait_for_checkpoint(&model_dir, 100, || log(logs, "chief:0"));
    let deadline = Instant::now() + LIMIT;
    assert!(signal("-STOP", cluster.0[3].id()));
    let stopped_at = Instant::now();
    while !log(logs, "chief:0").contains("stalled") {
        assert!(
            stopped_at.elapsed() < Duration::from_secs(8),
            "no stall warning"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(signal("-CONT", cluster.0[3].id()));
    // Training resumes: checkpoints, and the chief's summaries, go on.
    let resumed_at = step();
    while step() < resumed_at + 200 {
        for (i, task) in TASKS.iter().enumerate() {
            let exited = cluster.0[i].try_wait().unwrap();
            assert!(exited.is_none(), "{task} exited:\n{}", log(logs, task));
        }
        assert!(Instant::now() < deadline, "no progress after the stall");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stalled: Vec<f32> = event_files(&model_dir)
        .unwrap()
        .iter()
        .flat_map(|file| read_event_file(file).unwrap())
        .filter_map(|event| match event.what {
            EventKind::Summary(values) => Some(values),
            _ => None,
        })
        .flatten()
        .filter(|value| value.tag == "cluster/stalled_tasks")
        .filter_map(|value| match value.value {
            Value::Simple(v) => Some(v),
            _ => None,
        })
        .collect();
    assert!(stalled.contains(&1.0), "cluster/stalled_tasks: {stalled:?}");
    assert!(stalled.contains(&0.0), "cluster/stalled_tasks: {stalled:?}");
}

#[test]
fn a_peer_that_never_comes_up_is_named_within_the_startup_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let [chief, worker] = free_ports();
    let tf_config = format!(
        r#"{{"cluster": {{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{worker}"]}},
            "task": {{"type": "chief", "index": 0}}}}"#
    );
    let started = Instant::now();
    let output = Command::new(dnn_classifier())
        .args(train_on_iris())
        .args(["--max-steps", "10", "--startup-timeout-secs", "2"])
        .arg("--model-dir")
        .arg(dir.path().join("model"))
        .env("TF_CONFIG", tf_config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let waited = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code().unwrap_or(0) >= 128, "{stderr}");
    let error = error_line(&stderr, "");
    assert!(error.contains("lost worker:0"), "{error}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}
