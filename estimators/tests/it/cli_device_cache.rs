//! `dnn-classifier --device-cache-bytes`: the training rows kept on the device (forced on
//! the CPU here) train to the same model as rows uploaded batch by batch, resume as one
//! run, and a budget too small keeps them on the host, saying so.

use std::path::Path;
use std::process::Output;

use crate::cli::{bin, iris, last_json, run, stderr};

const ON_DEVICE: &str = "kept on the device; each step gathers its batch there";
const ON_HOST: &str = "the rows stay on the host, each batch uploaded as it is made";

fn train(model_dir: &Path, steps: &str, cache: Option<&str>) -> Output {
    let mut cmd = bin();
    cmd.args(["train", "--train", &iris("iris_train.csv"), "--eval"])
        .args([&iris("iris_test.csv"), "--label-column", "label"])
        .args(["--optimizer", "adam", "--batch-size", "16"])
        .args(["--shuffle-buffer", "50", "--intra-op-threads", "1"])
        .args(["--max-steps", steps, "--model-dir"])
        .arg(model_dir)
        .arg("--json");
    if let Some(bytes) = cache {
        cmd.args(["--device-cache-bytes", bytes]);
    }
    let output = run(&mut cmd);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

fn same_model(a: &Output, b: &Output, what: &str) {
    let (a, b) = (last_json(a), last_json(b));
    for metric in ["loss", "accuracy", "global_step"] {
        assert_eq!(a[metric], b[metric], "{metric}: {what}");
    }
}

#[test]
fn rows_kept_on_the_device_train_resume_and_fall_back_as_the_hosts_batches() {
    let dir = tempfile::tempdir().unwrap();
    let host = train(&dir.path().join("host"), "20", None);
    assert!(!stderr(&host).contains(ON_DEVICE), "{}", stderr(&host));

    let on_device = train(&dir.path().join("device"), "20", Some("100000000"));
    assert!(
        stderr(&on_device).contains(ON_DEVICE),
        "{}",
        stderr(&on_device)
    );
    same_model(&host, &on_device, "the table on the device");

    // Stopped inside the first epoch (7.5 steps of 16 rows): the resumed run reads the
    // rows whole before training, then goes on from the checkpoint's position.
    let split = dir.path().join("split");
    train(&split, "5", Some("100000000"));
    let resumed = train(&split, "20", Some("100000000"));
    assert!(stderr(&resumed).contains(ON_DEVICE), "{}", stderr(&resumed));
    same_model(&host, &resumed, "resumed on the device");

    // A checkpoint of the host's input resumes on the device, and the other way round.
    let mixed = dir.path().join("mixed");
    train(&mixed, "5", None);
    train(&mixed, "13", Some("100000000"));
    same_model(&host, &train(&mixed, "20", Some("0")), "host, device, host");

    let small = train(&dir.path().join("small"), "20", Some("1000"));
    assert!(stderr(&small).contains(ON_HOST), "{}", stderr(&small));
    same_model(&host, &small, "a budget too small");
}
