//! Status, metadata and predictions: both `:predict` formats, `:classify` and `:regress`.

use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use estimator::export::{prediction_json, ServableEstimator};
use estimators::{DnnClassifier, DnnRegressor};

use estimator_serve::{Batching, Loaders, ModelConfig, Server};
use serde_json::{json, Value};

use crate::support::*;

#[test]
fn a_tf_serving_client_gets_status_metadata_and_predictions_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 200);
    let version = version_of(&export);
    let running = Running::start(load_iris(&base));

    let (code, status) = running.get("/v1/models/iris");
    assert_eq!(code, 200, "{status}");
    assert_eq!(
        status,
        json!({"model_version_status": [{"version": version.to_string(), "state": "AVAILABLE",
            "status": {"error_code": "OK", "error_message": ""}}]})
    );

    let (code, metadata) = running.get("/v1/models/iris/metadata");
    assert_eq!(code, 200, "{metadata}");
    let signature = &metadata["metadata"]["signature_def"]["signature_def"]["serving_default"];
    for feature in FEATURES {
        assert_eq!(
            signature["inputs"][feature]["dtype"], "DT_FLOAT",
            "{metadata}"
        );
    }
    assert_eq!(signature["outputs"]["class_ids"]["dtype"], "DT_INT64");
    assert_eq!(metadata["model_spec"]["version"], version.to_string());
    // TF's shapes: the batch, then the values per example.
    let sizes = |output: &Value| -> Vec<Value> {
        let dims = output["tensor_shape"]["dim"].as_array().unwrap();
        dims.iter().map(|d| d["size"].clone()).collect()
    };
    let outputs = &signature["outputs"];
    assert_eq!(sizes(&outputs["probabilities"]), [json!("-1"), json!("3")]);
    assert_eq!(sizes(&outputs["class_ids"]), [json!("-1"), json!("1")]);
    let classification = &metadata["metadata"]["signature_def"]["signature_def"]["classification"];
    assert_eq!(
        sizes(&classification["outputs"]["scores"]),
        [json!("-1"), json!("3")]
    );

    // Row format, named features: every output of the signature, equal to Predictor's.
    let lines = expected(&export);
    let want: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{reply}");
    let predictions = reply["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 2);
    // The same f32s, bit for bit, and the same classes.
    let bits = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| (x.as_f64().unwrap() as f32).to_bits())
            .collect()
    };
    for (got, want) in predictions.iter().zip(&want) {
        for key in ["probabilities", "logits"] {
            assert_eq!(bits(&got[key]), bits(&want[key]), "{key}");
        }
        for key in ["class_ids", "classes", "all_classes"] {
            assert_eq!(got[key], want[key], "{key}");
        }
    }
    assert_eq!(predictions[0]["class_ids"], json!([0]));
    assert_eq!(predictions[1]["class_ids"], json!([2]));

    // Row format, lists in signature order; columnar format; a pinned version.
    let lists: Vec<Value> = rows()
        .iter()
        .map(|r| Value::Array(FEATURES.iter().map(|f| r[f].clone()).collect()))
        .collect();
    let (code, by_list) = running.post("/v1/models/iris:predict", &json!({"instances": lists}));
    assert_eq!(
        (code, &by_list["predictions"]),
        (200, &reply["predictions"])
    );
    let columns: serde_json::Map<String, Value> = FEATURES
        .iter()
        .map(|f| {
            (
                f.to_string(),
                Value::Array(rows().iter().map(|r| r[f].clone()).collect()),
            )
        })
        .collect();
    let path = format!("/v1/models/iris/versions/{version}:predict");
    let (code, columnar) = running.post(&path, &json!({"inputs": columns}));
    assert_eq!(code, 200, "{columnar}");
    assert_eq!(columnar["outputs"]["class_ids"], json!([[0], [2]]));
    assert_eq!(
        columnar["outputs"]["probabilities"][1],
        want[1]["probabilities"]
    );

    // Classify: [class, score] pairs; regress is refused for a classifier.
    let (code, classified) = running.post("/v1/models/iris:classify", &json!({"examples": rows()}));
    assert_eq!(code, 200, "{classified}");
    let first = classified["result"][0].as_array().unwrap();
    assert_eq!(first.len(), 3);
    assert_eq!(first[0][0], "0");
    assert_eq!(first[0][1], want[0]["probabilities"][0]);
    let (code, refused) = running.post("/v1/models/iris:regress", &json!({"examples": rows()}));
    assert_eq!(code, 400);
    assert!(error_of(&refused).contains("not a single-target regressor"));
}

#[test]
fn a_regressor_answers_regress_and_single_output_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_regressor(&dir.path().join("model"), &base);
    let server = Server::load(vec![ModelConfig::new("width", base)], Loaders::canned()).unwrap();
    let running = Running::start(server);

    let (code, regressed) = running.post("/v1/models/width:regress", &json!({"examples": rows()}));
    assert_eq!(code, 200, "{regressed}");
    let results = regressed["result"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    // One output in the signature: each prediction is its bare value.
    let (code, predicted) = running.post("/v1/models/width:predict", &json!({"instances": rows()}));
    assert_eq!(code, 200, "{predicted}");
    for (prediction, result) in predicted["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .zip(results)
    {
        assert_eq!(prediction, &json!([result]));
    }
    let (code, refused) = running.post("/v1/models/width:classify", &json!({"examples": rows()}));
    assert_eq!(code, 400);
    assert!(error_of(&refused).contains("not a classifier"), "{refused}");
    let path = format!("/v1/models/width/versions/{}/metadata", version_of(&export));
    let (code, metadata) = running.get(&path);
    assert_eq!(code, 200, "{metadata}");
    let outputs =
        &metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]["outputs"];
    assert_eq!(outputs["predictions"]["dtype"], "DT_FLOAT", "{metadata}");
    let dims = outputs["predictions"]["tensor_shape"]["dim"]
        .as_array()
        .unwrap();
    assert_eq!(dims.len(), 2, "{metadata}");
    assert_eq!(dims[1]["size"], "1", "{metadata}");
}

#[test]
fn predictions_on_a_pool_of_their_own_threads_answer_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let default = Running::start(load_iris(&base));
    // TF Serving's --tensorflow_intra_op_parallelism=1 --tensorflow_inter_op_parallelism=2.
    let threads = estimator_serve::PredictionThreads::new(1, 2).unwrap();
    let loaders = Loaders::canned().with_prediction_threads(threads);
    let pooled = Running::start(Server::load(iris_model(&base), loaders).unwrap());
    let body = json!({"instances": vec![rows()[1].clone(); 300]});
    let (code, want) = default.post("/v1/models/iris:predict", &body);
    assert_eq!(code, 200, "{want}");
    assert_eq!(pooled.post("/v1/models/iris:predict", &body), (200, want));
}

/// Each prediction's JSON value (`prediction_json`) for `rows`, by an `E` exported to
/// `export`, and the signature's outputs.
fn each_prediction<E>(export: &Path, rows: &[Value]) -> (Vec<Value>, Vec<String>)
where
    E: ServableEstimator<Batch = estimator::datasets::ColumnarBatch>,
{
    let (predictions, outputs) = predicted::<E>(export, rows);
    (predictions.iter().map(prediction_json).collect(), outputs)
}

/// The `:predict` answer to `rows` in `columnar` or row format, as text, written from each
/// prediction's JSON value with the signature's outputs.
fn answer_from_each_prediction(export: &Path, rows: &[Value], columnar: bool) -> String {
    let (predictions, outputs) = each_prediction::<DnnClassifier>(export, rows);
    let answer = match columnar {
        false => json!({"predictions": predictions.iter().map(|p| {
            outputs.iter().map(|k| (k.clone(), p[k].clone())).collect::<serde_json::Map<_, _>>()
        }).collect::<Vec<_>>()}),
        true => json!({"outputs": outputs.iter().map(|k| {
            (k.clone(), predictions.iter().map(|p| p[k].clone()).collect::<Value>())
        }).collect::<serde_json::Map<_, _>>()}),
    };
    answer.to_string()
}

/// The `:classify` answer to `rows`, as text, from each prediction's JSON value.
fn classes_from_each_prediction(export: &Path, rows: &[Value]) -> String {
    let (predictions, _) = each_prediction::<DnnClassifier>(export, rows);
    let pairs = |p: &Value| -> Vec<Value> {
        let classes = p["all_classes"].as_array().unwrap();
        (classes.iter().zip(p["probabilities"].as_array().unwrap()))
            .map(|(c, s)| json!([c, s]))
            .collect()
    };
    json!({"result": predictions.iter().map(pairs).collect::<Vec<_>>()}).to_string()
}

#[test]
fn answers_written_from_output_tensors_are_the_text_of_answers_from_each_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_iris(&dir.path().join("model"), &base, 20);
    let direct = Running::start(load_iris(&base));
    let batching = Loaders::canned().with_batching(Batching {
        max_batch_size: 1024,
        batch_timeout: Duration::from_millis(1),
        ..Batching::default()
    });
    let batching = Running::start(Server::load(iris_model(&base), batching).unwrap());
    let post = |running: &Running, body: &str, method: &str| {
        let address = running.url.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).unwrap();
        raw_post(&mut stream, &format!("/v1/models/iris:{method}"), body)
    };
    let text =
        |running: &Running, body: &Value, method: &str| post(running, &body.to_string(), method);
    let many: Vec<Value> = rows().into_iter().cycle().take(300).collect();
    let columns: serde_json::Map<String, Value> = FEATURES
        .iter()
        .map(|f| (f.to_string(), many.iter().map(|r| r[f].clone()).collect()))
        .collect();
    // The same rows with each value a one-element list (TF's `[batch, 1]` inputs).
    let listed: Vec<Value> = (many.iter())
        .map(|r| {
            FEATURES
                .iter()
                .map(|f| (f.to_string(), json!([r[f]])))
                .collect()
        })
        .collect();
    let cases = [
        (
            json!({"instances": rows()}),
            Some(answer_from_each_prediction(&export, &rows(), false)),
        ),
        (
            json!({"instances": many}),
            Some(answer_from_each_prediction(&export, &many, false)),
        ),
        (
            json!({"instances": listed}),
            Some(answer_from_each_prediction(&export, &many, false)),
        ),
        (
            json!({"inputs": columns}),
            Some(answer_from_each_prediction(&export, &many, true)),
        ),
        (
            json!({"signature_name": "classification", "instances": rows()}),
            None,
        ),
        (
            json!({"signature_name": "classification", "inputs": columns}),
            None,
        ),
        (
            json!({"instances": []}),
            Some(r#"{"predictions":[]}"#.to_string()),
        ),
    ];
    for (body, from_each_prediction) in &cases {
        let (code, answer) = text(&direct, body, "predict");
        assert_eq!(code, 200, "{answer}");
        if let Some(want) = from_each_prediction {
            assert_eq!(&answer, want, "{body}");
        }
        // Merged with other calls' rows by a batching thread, then split: the same text.
        assert_eq!(text(&batching, body, "predict"), (200, answer), "{body}");
    }
    let examples = json!({"examples": many});
    let classified = text(&direct, &examples, "classify");
    assert_eq!(
        classified,
        (200, classes_from_each_prediction(&export, &many))
    );
    assert_eq!(text(&batching, &examples, "classify"), classified);
    let listed = json!({"examples": listed});
    assert_eq!(text(&direct, &listed, "classify"), classified);
    assert_eq!(text(&batching, &listed, "classify"), classified);

    // A member given twice is left to the JSON reading, which takes the last: the rows are
    // read as JSON values, where the bodies above are read straight into tensors.
    let many = serde_json::to_string(&many).unwrap();
    for (member, method, want) in [
        ("instances", "predict", &cases[1].1),
        ("examples", "classify", &Some(classified.1.clone())),
    ] {
        let twice = format!(r#"{{"{member}": [], "{member}": {many}}}"#);
        let want = (200, want.clone().unwrap());
        assert_eq!(post(&direct, &twice, method), want, "{method}");
        assert_eq!(post(&batching, &twice, method), want, "{method}");
    }
}

#[test]
fn regress_answers_from_output_tensors_are_the_text_of_answers_from_each_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    let export = export_regressor(&dir.path().join("model"), &base);
    let server = Server::load(vec![ModelConfig::new("width", base)], Loaders::canned()).unwrap();
    let running = Running::start(server);
    let many: Vec<Value> = rows().into_iter().cycle().take(300).collect();
    let (predictions, _) = each_prediction::<DnnRegressor>(&export, &many);
    let values: Vec<&Value> = predictions.iter().map(|p| &p["predictions"][0]).collect();
    let want = json!({"result": values}).to_string();
    let address = running.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    let body = json!({"examples": many}).to_string();
    let answer = raw_post(&mut stream, "/v1/models/width:regress", &body);
    assert_eq!(answer, (200, want));
}
