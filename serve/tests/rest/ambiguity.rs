//! Version numbers claimed by several directories: copies of one export serve as that
//! version; different exports make it ambiguous, refused and logged naming every directory.

use estimator_serve::{LoadFault, Loaders, Server};
use serde_json::json;

use crate::support::*;

#[test]
fn two_labels_holding_different_exports_under_one_version_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let staging = dir.path().join("staging");
    let first = export_iris(&dir.path().join("model"), &staging, 20);
    let second = export_iris(&dir.path().join("model"), &staging, 40);
    let (latest, last) = (base.join("latest").join("7"), base.join("final").join("7"));
    std::fs::create_dir_all(base.join("latest")).unwrap();
    std::fs::create_dir_all(base.join("final")).unwrap();
    std::fs::rename(&first, &latest).unwrap();
    std::fs::rename(&second, &last).unwrap();

    // Nothing else to serve: the start is refused, naming both directories.
    let err = Server::load(iris_model(&base), Loaders::canned())
        .err()
        .expect("an ambiguous version alone is not servable")
        .to_string();
    assert!(err.contains("version 7 is ambiguous"), "{err}");
    assert!(err.contains(&last.display().to_string()), "{err}");
    assert!(err.contains(&latest.display().to_string()), "{err}");
    let base_arg = base.to_str().unwrap();
    let (status, log) = run_to_exit(&["--model-name", "iris", "--model-base-path", base_arg]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("version 7 is ambiguous"), "{log}");
    assert!(log.contains(&latest.display().to_string()), "{log}");

    // With another version beside it, the server starts and logs the refusal; neither label
    // nor the number answers, where before /labels/latest answered with the final export.
    let other = export_iris(&dir.path().join("model"), &base, 60);
    let served = Binary::start(
        &["--model-name", "iris", "--model-base-path", base_arg],
        None,
    );
    let refusal = served
        .log
        .iter()
        .find(|line| line.contains("ERROR") && line.contains("version 7 is ambiguous"))
        .unwrap_or_else(|| panic!("no error logged:\n{}", served.log.join("\n")));
    assert!(refusal.contains(&latest.display().to_string()), "{refusal}");
    assert!(refusal.contains(&last.display().to_string()), "{refusal}");
    let get = |path: &str| answer(ureq::get(&format!("{}{path}", served.url)).call());
    for path in [
        "/v1/models/iris/labels/latest",
        "/v1/models/iris/labels/final",
    ] {
        let (code, body) = get(path);
        assert_eq!(code, 404, "{path}: {body}");
    }
    let predicted = ureq::post(&format!("{}/v1/models/iris/versions/7:predict", served.url))
        .send_json(json!({"instances": rows()}));
    assert_eq!(answer(predicted).0, 404);
    // The status names it as a version that did not load, and why.
    let (code, status) = get("/v1/models/iris");
    assert_eq!(code, 200, "{status}");
    let ended = json!({"version": "7", "state": "END",
        "status": {"error_code": "FAILED_PRECONDITION", "error_message": refusal_text(refusal)}});
    assert_eq!(
        status["model_version_status"],
        json!([{"version": version_of(&other).to_string(), "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""}}, ended])
    );
    assert_eq!(
        get("/v1/models/iris/versions/7").1["model_version_status"][0],
        ended
    );
}

/// What a logged line says after its level and target.
fn refusal_text(line: &str) -> &str {
    &line[line.find("version 7 is ambiguous").unwrap()..]
}

#[test]
fn numbers_written_two_ways_are_one_version_ambiguous_unless_the_exports_are_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let staging = dir.path().join("staging");
    let kept = export_iris(&dir.path().join("model"), &base, 20);
    let first = export_iris(&dir.path().join("model"), &staging, 40);
    let second = export_iris(&dir.path().join("model"), &staging, 60);
    let (plain, padded) = (base.join("1800000000"), base.join("01800000000"));
    std::fs::rename(&first, &plain).unwrap();
    std::fs::rename(&second, &padded).unwrap();
    let running = Running::start(load_iris(&base));
    let (code, body) = running.post(
        "/v1/models/iris/versions/1800000000:predict",
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 404, "{body}");
    let (_, status) = running.get("/v1/models/iris");
    assert_eq!(status["model_version_status"][0]["state"], "END");
    assert_eq!(
        status["model_version_status"][1]["version"],
        version_of(&kept).to_string()
    );
    let versions = running.server.model_versions("iris").unwrap();
    let fault = &versions.refused[&1_800_000_000];
    assert!(
        matches!(fault, LoadFault::Ambiguous { version: 1_800_000_000, dirs } if dirs.len() == 2),
        "{fault:?}"
    );
    let why = fault.to_string();
    assert!(why.contains(&plain.display().to_string()), "{why}");
    assert!(why.contains(&padded.display().to_string()), "{why}");

    // The padded directory replaced by a copy of the plain one: the same export, served.
    std::fs::remove_dir_all(&padded).unwrap();
    copy_export(&plain, &padded);
    running.server.rescan();
    let (code, status) = running.get("/v1/models/iris/versions/1800000000");
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["model_version_status"][0]["state"], "AVAILABLE");
    let (code, reply) = running.post(
        "/v1/models/iris/versions/1800000000:predict",
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 200, "{reply}");

    // The same for two labels holding copies of one export (the latest and final
    // exporters after a run's last evaluation): both labels answer.
    for label in ["latest", "final"] {
        copy_export(&plain, &base.join(label).join("1900000000"));
    }
    running.server.rescan();
    for label in ["latest", "final"] {
        let (code, status) = running.get(&format!("/v1/models/iris/labels/{label}"));
        assert_eq!(code, 200, "{label}: {status}");
        assert_eq!(status["model_version_status"][0]["version"], "1900000000");
    }
}
