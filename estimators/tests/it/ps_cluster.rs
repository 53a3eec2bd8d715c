//! `dnn-classifier` with parameter servers, as real processes started by `estimator-launch`:
//! a ps killed and restarted mid-run, a chief killed.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;

use crate::cli::iris;
use crate::cluster::{
    dnn_classifier, error_line, estimator_launch, signal, task_json, wait_until, Reaper, LIMIT,
};

/// A launched cluster whose launcher output goes to files in `dir`.
pub struct Launched {
    reaper: Reaper,
    dir: std::path::PathBuf,
}

impl Launched {
    pub fn start(dir: &Path, launcher: &[&str], train: &[&str]) -> Self {
        let child = Command::new(estimator_launch())
            .args(launcher)
            .arg("--")
            .arg(dnn_classifier())
            .args(train)
            .env_remove("TF_CONFIG")
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("stdout")).unwrap())
            .stderr(File::create(dir.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Self {
            reaper: Reaper(vec![child]),
            dir: dir.to_path_buf(),
        }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap()
    }

    fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("stdout")).unwrap()
    }

    /// The launcher's own pid.
    pub fn launcher_pid(&self) -> u32 {
        self.reaper.0[0].id()
    }

    /// The pid the launcher reported for `task`'s first start.
    pub fn pid(&self, task: &str) -> u32 {
        let stderr = self.stderr();
        let needle = format!("started {task} (pid ");
        let start = stderr
            .find(&needle)
            .unwrap_or_else(|| panic!("{task} not started:\n{stderr}"))
            + needle.len();
        let digits: String = stderr[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    }

    /// Waits for a checkpoint at or past `step` in `model_dir`.
    pub fn wait_for_checkpoint(&self, model_dir: &Path, step: u64) {
        crate::cluster::wait_for_checkpoint(model_dir, step, || self.stderr());
    }

    /// A cluster of `launcher` training on Iris into `dir/model` up to `max_steps`, with
    /// `extra` flags, once it has saved its first checkpoint (step 200).
    pub fn past_first_checkpoint(
        dir: &Path,
        launcher: &[&str],
        max_steps: &str,
        extra: &[&str],
    ) -> Self {
        let model_dir = dir.join("model");
        let train = iris("iris_train.csv");
        let extra = [&["--train", train.as_str()], extra].concat();
        let args = train_args(model_dir.to_str().unwrap(), max_steps, &extra);
        let cluster = Self::start(dir, launcher, &args);
        cluster.wait_for_checkpoint(&model_dir, 200);
        cluster
    }

    /// The launcher's exit code, within `limit`.
    pub fn wait(&mut self, limit: Duration) -> i32 {
        let status = wait_until(&mut self.reaper.0[0], Instant::now() + limit)
            .unwrap_or_else(|| panic!("cluster still running:\n{}", self.stderr()));
        status.code().expect("the launcher exited by itself")
    }
}

pub fn train_args<'a>(model_dir: &'a str, max_steps: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "train",
        "--label-column",
        "label",
        "--optimizer",
        "adam",
        "--learning-rate",
        "0.001",
        "--batch-size",
        "64",
        "--max-steps",
        max_steps,
        "--save-checkpoints-steps",
        "200",
        "--model-dir",
        model_dir,
        "--json",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_killed_ps_is_restarted_and_training_completes_at_the_single_process_bar() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let eval = iris("iris_test.csv");
    // Every layer's weight in blocks over both ps tasks: the checkpoint put back is cut
    // anew, values and Adam's moments.
    let mut cluster = Launched::past_first_checkpoint(
        dir.path(),
        &["--workers", "1", "--ps", "2", "--max-restarts", "1"],
        "3000",
        &["--eval", &eval, "--ps-min-shard-bytes", "64"],
    );
    assert!(signal("-KILL", cluster.pid("ps:1")));
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("ps:1 exited with code 137"), "{stderr}");
    assert!(stderr.contains("restarting it (1 of 1)"), "{stderr}");
    assert!(
        stderr.contains("putting the latest checkpoint back on every ps task"),
        "{stderr}"
    );
    for line in stderr.lines().filter(|l| l.contains("exited with code")) {
        assert!(
            line.ends_with("exited with code 0") || line.contains("ps:1 exited with code 137"),
            "{line}\n{stderr}"
        );
    }
    let metrics = task_json(&cluster.stdout(), "chief:0", &stderr);
    assert_eq!(metrics["global_step"], 3000);
    let accuracy = metrics["accuracy"].as_f64().unwrap();
    assert!(accuracy >= 0.90, "accuracy {accuracy}");
    let (_, checkpoint) = CheckpointManager::new(&model_dir, None)
        .latest()
        .unwrap()
        .expect("a final checkpoint");
    let placed = checkpoint.meta["placement"]["variables"].to_string();
    assert!(
        placed.contains("/part_1"),
        "blocks on the ps tasks: {placed}"
    );
}

#[test]
fn a_killed_chief_stops_the_ps_and_the_workers_with_a_retryable_code_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Launched::past_first_checkpoint(
        dir.path(),
        &["--workers", "1", "--ps", "1", "--grace-secs", "60"],
        "100000000",
        &["--peer-timeout-secs", "3"],
    );
    assert!(signal("-KILL", cluster.pid("chief:0")));
    let killed = Instant::now();
    let code = cluster.wait(Duration::from_secs(60));
    let stderr = cluster.stderr();
    assert_eq!(code, 137, "the launcher reports the chief's code\n{stderr}");
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "the others exited within the timeout, not the launcher's grace\n{stderr}"
    );
    for task in ["worker:0", "ps:0"] {
        assert!(
            stderr.contains(&format!("{task} exited with code 128")),
            "{task}\n{stderr}"
        );
        let error = error_line(&stderr, &format!("[{task}] "));
        assert!(error.contains("lost chief:0"), "{error}");
    }
    assert!(!stderr.contains("killing"), "{stderr}");
}

#[test]
fn workers_ps_and_an_evaluator_all_end_by_themselves_after_evaluating_every_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let (train, eval) = (iris("iris_train.csv"), iris("iris_test.csv"));
    let mut args = train_args(
        model_dir.to_str().unwrap(),
        "1000",
        &[
            "--train",
            &train,
            "--eval",
            &eval,
            "--exporters",
            "latest,best,final",
        ],
    );
    args[0] = "train-and-evaluate";
    let mut cluster = Launched::start(
        dir.path(),
        &[
            "--workers",
            "2",
            "--ps",
            "2",
            "--evaluator",
            "--grace-secs",
            "60",
        ],
        &args,
    );
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    assert_eq!(code, 0, "{stderr}");
    // The launcher names every task that did not exit 0, and every task it had to kill.
    assert_eq!(
        stderr.matches("exited with code").count(),
        1,
        "only the chief's exit is reported:\n{stderr}"
    );
    assert!(stderr.contains("chief:0 exited with code 0"), "{stderr}");
    assert!(!stderr.contains("killing"), "{stderr}");

    let metrics = task_json(&cluster.stdout(), "evaluator:0", &stderr);
    assert_eq!(metrics["global_step"], 1000);
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");

    let checkpoints: Vec<u64> = CheckpointManager::new(&model_dir, None)
        .list()
        .unwrap()
        .iter()
        .filter_map(|p| p.file_name()?.to_str().and_then(checkpoint_step))
        .collect();
    let history = std::fs::read_to_string(model_dir.join("eval/history.jsonl")).unwrap();
    let evaluated: Vec<u64> = history
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["global_step"]
                .as_u64()
                .unwrap()
        })
        .collect();
    // Each checkpoint at most once, in order, the last one always: an evaluator slower than
    // the checkpoints skips to the newest (as TF's does), which a loaded machine can make.
    assert!(
        evaluated.windows(2).all(|w| w[0] < w[1]),
        "{evaluated:?} evaluated in order, once each"
    );
    assert!(
        evaluated.iter().all(|s| checkpoints.contains(s)),
        "{evaluated:?} are checkpoints {checkpoints:?}"
    );
    assert_eq!(
        evaluated.last(),
        checkpoints.last(),
        "the final checkpoint evaluated"
    );
    assert!(std::fs::read_dir(model_dir.join("eval")).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("tfevents")));
    for exporter in ["latest", "best", "final"] {
        let exports = std::fs::read_dir(model_dir.join("export").join(exporter))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .join("model.safetensors")
                    .exists()
            })
            .count();
        assert!(exports >= 1, "no {exporter} export");
    }
}

fn checkpoint_step(name: &str) -> Option<u64> {
    estimator::checkpoint::parse_checkpoint_file_name(name)
}
