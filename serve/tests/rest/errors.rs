//! Bad requests: TF Serving's status codes and an error naming the fault; the metrics that
//! count them. A TensorFlow SavedModel where an export should be, named as such.

use estimator_serve::{Loaders, Server};
use serde_json::json;

use crate::support::*;

#[test]
fn bad_requests_get_tf_serving_status_codes_and_an_error_naming_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    let version = version_of(&export);
    let running = Running::start(load_iris(&base).with_body_limit(4096));

    let (code, body) = running.post("/v1/models/rose:predict", &json!({"instances": rows()}));
    assert_eq!(code, 404);
    assert!(error_of(&body).contains("model 'rose'"), "{body}");
    let (code, body) = running.get("/v1/models/rose");
    assert_eq!(code, 404, "{body}");
    let (code, body) = running.post(
        &format!("/v1/models/iris/versions/{}:predict", version + 1),
        &json!({"instances": rows()}),
    );
    assert_eq!(code, 404);
    assert!(
        error_of(&body).contains(&format!("version {}", version + 1)),
        "{body}"
    );
    let (code, body) = running.get("/v1/models/iris/labels/stable");
    assert_eq!(code, 404);
    assert!(error_of(&body).contains("label 'stable'"), "{body}");

    let (code, body) = running.post_raw("/v1/models/iris:predict", "{\"instances\": [");
    assert_eq!(code, 400);
    assert!(error_of(&body).contains("not JSON"), "{body}");
    let mut missing = rows();
    missing[1].as_object_mut().unwrap().remove("petal_width_cm");
    let (code, body) = running.post("/v1/models/iris:predict", &json!({"instances": missing}));
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("instance 1: input 'petal_width_cm' is missing"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"instances": [[5.1, 3.5, 1.4]]}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("instance 0 has 3 values; the signature has 4"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"instances": [{"sepal_length_cm": "long", "sepal_width_cm": 3.5,
            "petal_length_cm": 1.4, "petal_width_cm": 0.2}]}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("input 'sepal_length_cm' must be a number"),
        "{body}"
    );
    let (code, body) = running.post(
        "/v1/models/iris:predict",
        &json!({"inputs": {"sepal_length_cm": [1.0, 2.0], "sepal_width_cm": [1.0]}}),
    );
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("every input needs one per instance"),
        "{body}"
    );
    let (code, body) = running.post("/v1/models/iris:explain", &json!({"instances": rows()}));
    assert_eq!(code, 400);
    assert!(
        error_of(&body).contains("unknown method 'explain'"),
        "{body}"
    );

    // A signature the export lacks is refused, not answered with the default one.
    for verb in ["predict", "classify"] {
        let body = match verb {
            "predict" => json!({"signature_name": "serving_v2", "instances": rows()}),
            _ => json!({"signature_name": "serving_v2", "examples": rows()}),
        };
        let (code, body) = running.post(&format!("/v1/models/iris:{verb}"), &body);
        assert_eq!(code, 400, "{verb}");
        assert!(
            error_of(&body).contains("signature name: \"serving_v2\" not found"),
            "{body}"
        );
    }
    // The signature's names: TF Serving's default, and a TF estimator export's `predict`.
    for name in ["serving_default", "predict"] {
        let named = json!({"signature_name": name, "instances": rows()});
        assert_eq!(
            running.post("/v1/models/iris:predict", &named).0,
            200,
            "{name}"
        );
    }
    // TF's classification signature: each row's classes and their scores.
    let named = json!({"signature_name": "classification", "instances": rows()});
    let (code, body) = running.post("/v1/models/iris:predict", &named);
    assert_eq!(code, 200, "{body}");
    let first = &body["predictions"][0];
    assert_eq!(first["classes"], json!(["0", "1", "2"]), "{body}");
    assert_eq!(first["scores"].as_array().map(Vec::len), Some(3), "{body}");
    let (_, metadata) = running.get("/v1/models/iris/metadata");
    let signatures = &metadata["metadata"]["signature_def"]["signature_def"];
    assert_eq!(
        signatures["classification"]["method_name"],
        "tensorflow/serving/classify"
    );
    assert!(signatures["regression"].is_null(), "{metadata}");
    // `:classify` answers from the classification signature. `:regress` on it reads the
    // predictions as TF Serving does by default (a classifier has no value to regress)...
    let named = |name: &str| json!({"signature_name": name, "examples": rows()});
    let (code, body) = running.post("/v1/models/iris:classify", &named("classification"));
    assert_eq!(code, 200, "{body}");
    let (code, body) = running.post("/v1/models/iris:regress", &named("classification"));
    assert_eq!(code, 400, "{body}");
    assert!(
        error_of(&body).contains("not a single-target regressor"),
        "{body}"
    );
    // ... and with the method check on, is refused for the signature's method.
    let loaders = Loaders::canned().with_signature_method_name_check(true);
    let checking = Running::start(Server::load(iris_model(&base), loaders).unwrap());
    let (code, body) = checking.post("/v1/models/iris:regress", &named("classification"));
    assert_eq!(code, 400, "{body}");
    assert!(
        error_of(&body).starts_with(
            "Expected regression signature method_name to be tensorflow/serving/regress. \
             Was: tensorflow/serving/classify"
        ),
        "{body}"
    );
    let (code, body) = checking.post("/v1/models/iris:classify", &named("classification"));
    assert_eq!(code, 200, "{body}");

    let huge = json!({"instances": vec![rows()[0].clone(); 100]});
    let (code, body) = running.post("/v1/models/iris:predict", &huge);
    assert_eq!(code, 413);
    assert!(error_of(&body).contains("above the limit"), "{body}");

    // Every request to the model was counted, the failed ones apart.
    let metrics = ureq::get(&format!("{}/monitoring/prometheus/metrics", running.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let errors = ":tensorflow:serving:request_count{model_name=\"iris\",status=\"ERROR\"} 11";
    assert!(metrics.contains(errors), "{metrics}");
    let ok = ":tensorflow:serving:request_count{model_name=\"iris\",status=\"OK\"} 4";
    assert!(metrics.contains(ok), "{metrics}");
    assert!(!metrics.contains("rose"), "{metrics}");
}

#[test]
fn a_tensorflow_saved_model_is_named_as_such_rather_than_as_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let version = dir.path().join("1");
    std::fs::create_dir_all(version.join("variables")).unwrap();
    std::fs::write(version.join("saved_model.pb"), b"\x08\x01").unwrap();
    let err = Server::load(iris_model(dir.path()), Loaders::canned())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("holds a TensorFlow SavedModel (saved_model.pb)"),
        "{err}"
    );
    assert!(err.contains("model 'iris': no version under"), "{err}");
}
