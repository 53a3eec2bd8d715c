//! A corpus of malformed input — TF_CONFIGs, CSV files, flags, checkpoints — run through the
//! `dnn-classifier` binary: every case exits with a code in 1..=127 and one error line that
//! names the field, the file and line, or the flag at fault; no panic, no hang.

mod checkpoints;
mod csv_files;
mod flags;
mod special_files;
mod tf_config;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cli::bin;

/// Longest a malformed case may run before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// Runs `cmd`, killing it (and failing) if it runs longer than [`HANG`].
fn bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dnn-classifier starts");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > HANG {
            child.kill().unwrap();
            panic!("{cmd:?} hung for {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// `train` on Iris for 5 steps into `model_dir`, with `extra` flags.
fn train(model_dir: &Path, file: &Path, extra: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.args(["train", "--label-column", "label", "--max-steps", "5"])
        .arg("--model-dir")
        .arg(model_dir)
        .arg("--train")
        .arg(file)
        .args(extra);
    cmd
}
