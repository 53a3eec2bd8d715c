//! A launched cluster training on its own files under FILE sharding, stopped mid-epoch and
//! launched again, ends with the weights of an uninterrupted run: the worker reads on in
//! its own files, where it stood, not from their start.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use estimator::checkpoint::CheckpointManager;

use crate::cli::iris;
use crate::cluster::{dnn_classifier, estimator_launch, wait_until, Reaper, LIMIT};

/// Iris' training rows in five files of 24 rows, `part-0.csv`, …: under FILE the chief
/// reads three (72 rows), the worker two (48 rows), so their epochs end at other steps.
fn split_iris(dir: &Path) -> String {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    for (i, part) in rows.chunks(rows.len().div_ceil(5)).enumerate() {
        let body = part.join("\n");
        std::fs::write(
            dir.join(format!("part-{i}.csv")),
            format!("{header}\n{body}\n"),
        )
        .unwrap();
    }
    format!("{}/part-*.csv", dir.display())
}

/// A chief and a worker trained to `steps` on `glob` in `model_dir`; the launcher's stderr.
fn launch(model_dir: &Path, glob: &str, steps: &str) -> String {
    let logs = model_dir.with_extension("log");
    let mut launcher = Command::new(estimator_launch())
        .args([
            "--workers",
            "1",
            "--grace-secs",
            "60",
            "--",
            dnn_classifier(),
        ])
        .args(["train", "--train", glob, "--eval", &iris("iris_test.csv")])
        .args(["--label-column", "label", "--optimizer", "adam"])
        .args(["--auto-shard-policy", "file", "--cycle-length", "2"])
        .args(["--block-length", "3", "--shuffle-buffer", "8"])
        .args(["--batch-size", "16", "--save-checkpoints-steps", "3"])
        .args(["--max-steps", steps, "--model-dir"])
        .arg(model_dir)
        .env_remove("TF_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&logs).unwrap())
        .spawn()
        .unwrap();
    let status = wait_until(&mut launcher, Instant::now() + LIMIT);
    let _reaper = Reaper(vec![launcher]);
    let stderr = std::fs::read_to_string(&logs).unwrap();
    let status = status.unwrap_or_else(|| panic!("cluster still running; stderr:\n{stderr}"));
    assert_eq!(status.code(), Some(0), "stderr:\n{stderr}");
    stderr
}

/// The weights of the latest checkpoint in `model_dir`.
fn weights(model_dir: &PathBuf) -> Vec<u8> {
    let (_, checkpoint) = (CheckpointManager::new(model_dir, None).latest())
        .unwrap()
        .expect("a checkpoint");
    checkpoint.section("model").unwrap().to_vec()
}

#[test]
fn a_file_sharded_worker_relaunched_mid_epoch_trains_the_weights_of_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let glob = split_iris(dir.path());
    let whole = dir.path().join("whole");
    launch(&whole, &glob, "12");
    // At step 4 the worker is a batch into its second epoch, the chief in its first, one
    // step past the positions shared at step 3.
    let split = dir.path().join("split");
    launch(&split, &glob, "4");
    let resumed = launch(&split, &glob, "12");
    let own = |l: &str| l.starts_with("[worker:0]") && l.contains("own input position");
    assert!(
        resumed.lines().any(own),
        "the worker did not resume its own input:\n{resumed}"
    );
    assert!(
        weights(&split) == weights(&whole),
        "other weights:\n{resumed}"
    );
}
