//! `custom_estimator_serve` as a user runs it (built with `--features serve`): the export
//! the training binary wrote, served over loopback to a real HTTP client, and a one-line
//! error for a bad flag.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

/// The server, killed when the test ends, whether or not it passed.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_serving_binary_serves_what_the_training_binary_exported() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("iris");
    let trained = Command::new(env!("CARGO_BIN_EXE_custom_estimator"))
        .args(["--steps", "20", "--model-dir"])
        .arg(&model_dir)
        .output()
        .unwrap();
    assert!(
        trained.status.success(),
        "{}",
        String::from_utf8_lossy(&trained.stderr)
    );

    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_custom_estimator_serve"))
            .args(["--model-name", "iris", "--port", "0", "--model-base-path"])
            .arg(model_dir.join("export"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The address is the one logged line that names it.
    let mut log = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let address = log
        .by_ref()
        .map(|line| line.unwrap())
        .find_map(|line| {
            let (_, rest) = line.split_once("serving the REST API on ")?;
            Some(rest.split_whitespace().next()?.to_string())
        })
        .expect("a line saying where it listens");
    let url = format!("{address}/v1/models/iris:predict");

    let body = json!({ "instances": [{ "features": [5.1, 3.5, 1.4, 0.2] }] });
    let reply: Value = ureq::post(&url)
        .send_json(&body)
        .unwrap()
        .into_json()
        .unwrap();
    let p = &reply["predictions"][0];
    assert!(p["class_id"].as_u64().unwrap() < 3, "{reply}");
    assert_eq!(p["probabilities"].as_array().unwrap().len(), 3, "{reply}");

    let bad = json!({ "instances": [{ "features": [5.1, 3.5, 1.4, 0.2], "colour": "red" }] });
    match ureq::post(&url).send_json(&bad) {
        Err(ureq::Error::Status(400, reply)) => {
            let error: Value = reply.into_json().unwrap();
            assert!(
                error["error"].as_str().unwrap().contains("'colour'"),
                "{error}"
            );
        }
        other => panic!("not a 400: {other:?}"),
    }
}

#[test]
fn a_bad_flag_is_refused_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_custom_estimator_serve"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("'--bogus'"), "{stderr}");
}
