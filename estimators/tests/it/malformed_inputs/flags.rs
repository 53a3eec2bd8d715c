//! Flags with values out of range or of the wrong kind, refused naming the flag.

use std::path::PathBuf;

use super::{bounded, train};
use crate::cli::{assert_user_error, iris};

#[test]
fn bad_flags_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    let cases: [(&[&str], &str); 14] = [
        (&["--batch-size", "0"], "--batch-size"),
        (&["--batch-size=-3"], "--batch-size"),
        (&["--hidden-units", "0"], "hidden"),
        (&["--hidden-units", "a,b"], "--hidden-units"),
        (&["--dropout", "1.5"], "dropout"),
        (&["--learning-rate=-1"], "--learning-rate"),
        (&["--learning-rate", "nan"], "--learning-rate"),
        (&["--clip-norm", "0"], "norm"),
        (&["--l2-regularization=-1"], "l2"),
        (&["--device", "tpu"], "--device"),
        (&["--mirrored", "0"], "--mirrored"),
        (
            &["--save-checkpoints-steps", "0"],
            "--save-checkpoints-steps",
        ),
        (
            &["--learning-rate-schedule", "cosine_decay:decay_steps=0"],
            "decay_steps",
        ),
        (&["--optimizer", "lion"], "--optimizer"),
    ];
    for (i, (flags, needle)) in cases.into_iter().enumerate() {
        let output = bounded(&mut train(
            &dir.path().join(format!("m{i}")),
            &iris_train,
            flags,
        ));
        assert_user_error(output, needle);
    }
}
