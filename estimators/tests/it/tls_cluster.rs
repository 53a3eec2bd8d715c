//! Mutual TLS between the tasks of real clusters: a launched ps cluster with certificates
//! trains; beside a cluster training by hand, a task whose certificate another CA issued,
//! and one without any, are refused, named in the chief's log, and the cluster trains on.

use std::fs::File;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;

use crate::cli::iris;
use crate::cluster::{
    dnn_classifier, error_line, estimator_launch, free_ports, wait_until, Reaper, LIMIT,
};

fn train_args(model_dir: &Path, max_steps: u64, startup_timeout_secs: u64) -> Vec<String> {
    let model_dir = model_dir.display().to_string();
    let steps = max_steps.to_string();
    let startup = startup_timeout_secs.to_string();
    let args = [
        "train",
        "--train",
        &iris("iris_train.csv"),
        "--label-column",
        "label",
        "--hidden-units",
        "16",
        "--batch-size",
        "32",
        "--max-steps",
        &steps,
        "--save-checkpoints-steps",
        "50",
        "--startup-timeout-secs",
        &startup,
        "--model-dir",
        &model_dir,
    ];
    args.iter().map(ToString::to_string).collect()
}

/// Writes a CA and a certificate per `NAME=HOST` task into `dir` with `estimator-launch certs`.
fn certs(dir: &Path, tasks: &[&str]) {
    let mut command = Command::new(estimator_launch());
    command.args(["certs", "--out", dir.to_str().unwrap()]);
    for task in tasks {
        command.args(["--task", task]);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let listed = String::from_utf8(output.stdout).unwrap();
    assert_eq!(listed.lines().count(), 1 + 2 * tasks.len(), "{listed}");
}

#[test]
fn a_launched_ps_cluster_with_certificates_trains() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let mut launcher = Command::new(estimator_launch())
        .args([
            "--workers",
            "1",
            "--ps",
            "1",
            "--grace-secs",
            "30",
            "--tls-dir",
        ])
        .arg(dir.path().join("tls"))
        .arg("--")
        .arg(dnn_classifier())
        .args(train_args(&model_dir, 150, 60))
        .env_remove("TF_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let status = wait_until(&mut launcher, Instant::now() + LIMIT);
    let _reaper = Reaper(vec![launcher]);
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    let latest = CheckpointManager::new(&model_dir, None).latest_step();
    assert_eq!(latest.unwrap(), Some(150));
    for task in ["chief-0", "worker-0", "ps-0"] {
        assert!(
            dir.path().join(format!("tls/{task}.key")).is_file(),
            "{task}"
        );
    }
}

/// A `dnn-classifier` task of the cluster `cluster` (TF_CONFIG's), logging to `log`; a
/// worker waits 5 s for its peers, the chief a minute.
fn task(cluster: &str, kind: &str, tls: Option<[&Path; 3]>, model_dir: &Path, log: &Path) -> Child {
    let startup = if kind == "chief" { 60 } else { 5 };
    let mut command = Command::new(dnn_classifier());
    command
        .args(train_args(model_dir, 200, startup))
        .env(
            "TF_CONFIG",
            format!(r#"{{{cluster}, "task": {{"type": "{kind}", "index": 0}}}}"#),
        )
        .env_remove("ESTIMATOR_CLUSTER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(log).unwrap());
    if let Some([cert, key, ca]) = tls {
        command
            .env("ESTIMATOR_TLS_CERT", cert)
            .env("ESTIMATOR_TLS_KEY", key)
            .env("ESTIMATOR_TLS_CA", ca);
    }
    command.spawn().unwrap()
}

#[test]
fn strangers_are_refused_and_named_while_the_cluster_trains() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    certs(&ours, &["chief=127.0.0.1", "worker=127.0.0.1"]);
    certs(&theirs, &["stranger=127.0.0.1"]);
    let files = |dir: &Path, name: &str| {
        [
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        ]
    };
    let ca = ours.join("ca.crt");
    let [chief_cert, chief_key] = files(&ours, "chief");
    let [worker_cert, worker_key] = files(&ours, "worker");
    let [stranger_cert, stranger_key] = files(&theirs, "stranger");

    let [chief, worker, stranger_port, plaintext_port] = free_ports();
    let ours_cluster = format!(
        r#""cluster": {{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{worker}"]}}"#
    );
    let model_dir = dir.path().join("model");
    let log = |name: &str| dir.path().join(format!("{name}.log"));
    let chief_task = task(
        &ours_cluster,
        "chief",
        Some([&chief_cert, &chief_key, &ca]),
        &model_dir,
        &log("chief"),
    );
    let mut reaper = Reaper(vec![chief_task]);
    let listening = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", chief)).is_err() {
        assert!(Instant::now() < listening, "the chief does not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Strangers claim worker:0's seat from ports of their own: one with a certificate of
    // another CA (it trusts the cluster's), one in plaintext.
    let stranger_tls = [stranger_cert.as_path(), &stranger_key, &ca];
    let strangers = [
        (Some(stranger_tls), "stranger", stranger_port),
        (None, "plaintext", plaintext_port),
    ];
    for (tls, name, port) in strangers {
        let cluster = format!(
            r#""cluster": {{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{port}"]}}"#
        );
        let mut stranger = task(&cluster, "worker", tls, &dir.path().join(name), &log(name));
        let status = wait_until(&mut stranger, Instant::now() + Duration::from_secs(60));
        let log = std::fs::read_to_string(log(name)).unwrap();
        let code = status.and_then(|s| s.code());
        assert!(
            code.is_some_and(|c| c != 0),
            "{name} exited with {code:?}:\n{log}"
        );
        let error = error_line(&log, "");
        assert!(error.contains("chief:0"), "{error}");
        if name == "stranger" {
            assert_eq!(code, Some(1), "{log}");
            assert!(error.contains("TLS: "), "{error}");
        }
    }
    reaper.0.push(task(
        &ours_cluster,
        "worker",
        Some([&worker_cert, &worker_key, &ca]),
        &dir.path().join("worker-model"),
        &log("worker"),
    ));
    let chief_status = wait_until(&mut reaper.0[0], Instant::now() + LIMIT);
    let chief_log = std::fs::read_to_string(log("chief")).unwrap();
    assert_eq!(chief_status.and_then(|s| s.code()), Some(0), "{chief_log}");
    let latest = CheckpointManager::new(&model_dir, None).latest_step();
    assert_eq!(latest.unwrap(), Some(200));
    let refusals: Vec<&str> = chief_log
        .lines()
        .filter(|l| l.contains("refused a TLS connection from 127.0.0.1:"))
        .collect();
    assert!(
        refusals
            .iter()
            .any(|l| l.contains("subject \"CN=stranger\"")),
        "the stranger is not named:\n{chief_log}"
    );
    assert!(
        refusals.iter().any(|l| l.contains("it speaks no TLS")),
        "the plaintext task's refusal is not logged:\n{chief_log}"
    );
}

#[test]
fn unusable_tls_settings_are_refused_naming_the_variable_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    certs(&d.join("ours"), &["chief=127.0.0.1", "worker=127.0.0.1"]);
    let path = |name: &str| d.join(name).display().to_string();
    std::fs::write(d.join("garbage.pem"), "not a PEM file\n").unwrap();
    let (cert, key, ca) = (
        path("ours/chief.crt"),
        path("ours/chief.key"),
        path("ours/ca.crt"),
    );
    let (other_key, missing, garbage) = (
        path("ours/worker.key"),
        path("missing.crt"),
        path("garbage.pem"),
    );
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (
            vec![("ESTIMATOR_TLS_CERT", &cert)],
            "ESTIMATOR_TLS_KEY is not set".into(),
        ),
        (
            vec![("ESTIMATOR_TLS_CA", &ca), ("ESTIMATOR_TLS_KEY", &key)],
            "ESTIMATOR_TLS_CERT is not set".into(),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &missing),
                ("ESTIMATOR_TLS_KEY", &key),
                ("ESTIMATOR_TLS_CA", &ca),
            ],
            format!("ESTIMATOR_TLS_CERT ({missing})"),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &garbage),
                ("ESTIMATOR_TLS_KEY", &key),
                ("ESTIMATOR_TLS_CA", &ca),
            ],
            format!("ESTIMATOR_TLS_CERT ({garbage}): no CERTIFICATE"),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &cert),
                ("ESTIMATOR_TLS_KEY", &cert),
                ("ESTIMATOR_TLS_CA", &ca),
            ],
            format!("ESTIMATOR_TLS_KEY ({cert}): no private key"),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &cert),
                ("ESTIMATOR_TLS_KEY", &key),
                ("ESTIMATOR_TLS_CA", &garbage),
            ],
            format!("ESTIMATOR_TLS_CA ({garbage})"),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &cert),
                ("ESTIMATOR_TLS_KEY", &other_key),
                ("ESTIMATOR_TLS_CA", &ca),
            ],
            format!("ESTIMATOR_TLS_CERT and ESTIMATOR_TLS_KEY: {other_key} is not the private key of {cert}"),
        ),
        (
            vec![
                ("ESTIMATOR_TLS_CERT", &cert),
                ("ESTIMATOR_TLS_KEY", &key),
                ("ESTIMATOR_TLS_CA", &ca),
                ("ESTIMATOR_TLS_SERVER_NAME", ""),
            ],
            "ESTIMATOR_TLS_SERVER_NAME is empty".into(),
        ),
    ];
    let [chief, worker] = free_ports();
    let tf_config = format!(
        r#"{{"cluster": {{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{worker}"]}}, "task": {{"type": "chief", "index": 0}}}}"#
    );
    for (i, (env, needle)) in cases.into_iter().enumerate() {
        let mut command = Command::new(dnn_classifier());
        command
            .args(train_args(&d.join(format!("m{i}")), 5, 5))
            .env("TF_CONFIG", &tf_config)
            .env_remove("ESTIMATOR_TLS_SERVER_NAME")
            .envs(env)
            .stdin(Stdio::null());
        let output = command.output().unwrap();
        crate::cli::assert_user_error(output, &needle);
    }
}
