//! The user binary as a user runs it: a short run ends with its metrics line and an export,
//! and a bad argument is a one-line error.

use std::process::Command;

fn custom_estimator() -> Command {
    Command::new(env!("CARGO_BIN_EXE_custom_estimator"))
}

#[test]
fn a_short_run_prints_its_metrics_at_the_last_step_and_exports_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("iris");
    let out = custom_estimator()
        .args(["--steps", "20", "--model-dir"])
        .arg(&model_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let metrics: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a metrics line")).unwrap();
    assert_eq!(metrics["global_step"], 20.0, "{stdout}");
    assert!((0.0..=1.0).contains(&metrics["accuracy"].as_f64().unwrap()));
    // Beside the export base's lock file: one export directory.
    let exports = estimator::export::export_stamps(&model_dir.join("export")).unwrap();
    assert_eq!(exports.len(), 1);
}

#[test]
fn an_unknown_argument_is_a_one_line_error_naming_it() {
    let out = custom_estimator().arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("custom_estimator: error: unknown argument --bogus"),
        "{stderr}"
    );
}
