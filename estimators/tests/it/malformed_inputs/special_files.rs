//! Inputs that are not regular files — a device, a directory, a FIFO — refused without
//! reading them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{bounded, train, HANG};
use crate::cli::{assert_user_error, bin, iris};

#[test]
fn inputs_that_are_not_regular_files_are_refused_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("eval.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    let fifo_needle = format!(
        "{} is a FIFO (named pipe), not a regular file",
        fifo.display()
    );
    // Read without bound, blocked for ever, or not data at all.
    let mut cases: Vec<(Command, String)> = vec![
        (
            train(&d.join("m0"), Path::new("/dev/zero"), &[]),
            "/dev/zero is a character device, not a regular file".into(),
        ),
        (
            train(&d.join("m1"), d, &[]),
            format!("{} is a directory, not a regular file", d.display()),
        ),
        (train(&d.join("m2"), &fifo, &[]), fifo_needle.clone()),
    ];
    // As the evaluation file, after (or before) training.
    let eval = ["--eval", fifo.to_str().unwrap()];
    cases.push((
        train(&d.join("m3"), &iris_train, &eval),
        fifo_needle.clone(),
    ));
    let mut train_and_evaluate = train(&d.join("m4"), &iris_train, &eval);
    let args: Vec<OsString> = train_and_evaluate.get_args().map(OsString::from).collect();
    train_and_evaluate = bin();
    train_and_evaluate
        .arg("train-and-evaluate")
        .args(&args[1..]);
    cases.push((train_and_evaluate, fifo_needle.clone()));
    let trained = d.join("m5");
    assert!(bounded(&mut train(&trained, &iris_train, &[]))
        .status
        .success());
    let mut evaluate = bin();
    evaluate
        .arg("evaluate")
        .args(eval)
        .arg("--model-dir")
        .arg(&trained);
    cases.push((evaluate, fifo_needle));
    for (mut cmd, needle) in cases {
        let started = Instant::now();
        let output = bounded(&mut cmd);
        assert!(
            started.elapsed() < HANG / 2,
            "{cmd:?} took {:?}",
            started.elapsed()
        );
        assert_user_error(output, &needle);
    }
}
