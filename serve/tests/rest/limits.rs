//! What a request may hold: numbers within float32, at most so many instances, and the
//! budget of instances decoded at once shared by concurrent requests.

use std::time::Duration;

use estimator_serve::Limits;
use serde_json::{json, Value};

use crate::support::*;

#[test]
fn numbers_beyond_float32_get_400_naming_the_instance_the_input_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let running = start_iris_with(dir.path(), Limits::default());
    let mut huge = rows();
    huge[1]["petal_width_cm"] = json!(1e39);
    let columns = |rows: &[Value]| -> Value {
        FEATURES
            .iter()
            .map(|f| (f.to_string(), rows.iter().map(|r| r[f].clone()).collect()))
            .collect::<serde_json::Map<String, Value>>()
            .into()
    };
    for (path, body) in [
        ("/v1/models/iris:predict", json!({"instances": huge})),
        ("/v1/models/iris:predict", json!({"inputs": columns(&huge)})),
        ("/v1/models/iris:classify", json!({"examples": huge})),
        ("/v1/models/iris:regress", json!({"examples": huge})),
    ] {
        let (code, reply) = running.post(path, &body);
        assert_eq!(code, 400, "{path}: {reply}");
        assert!(
            error_of(&reply).contains("instance 1: input 'petal_width_cm' is 1e+39"),
            "{path}: {reply}"
        );
        assert!(
            error_of(&reply).contains("outside float32's range (±3.4028235e38)"),
            "{path}: {reply}"
        );
    }
    let mut negative = rows();
    negative[0]["sepal_length_cm"] = json!([-4e38]);
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": negative}));
    assert_eq!(code, 400, "{reply}");
    assert!(
        error_of(&reply).contains("instance 0: input 'sepal_length_cm' is -4e+38"),
        "{reply}"
    );
    // The largest float32 itself is a number the model takes.
    let mut largest = rows();
    largest[0]["sepal_length_cm"] = json!(3.4028235e38);
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": largest}));
    assert_eq!(code, 200, "{reply}");
}

#[test]
fn a_request_above_the_instance_cap_gets_413_naming_the_limit_and_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_instances_per_request: 50,
        max_instances_in_flight: 100,
        ..Limits::default()
    };
    let running = start_iris_with(dir.path(), limits);
    let many = |n: usize| -> Vec<Value> { (0..n).map(|i| rows()[i % 2].clone()).collect() };
    let column = |n: usize| -> Value {
        FEATURES
            .iter()
            .map(|f| (f.to_string(), json!(vec![1.0; n])))
            .collect::<serde_json::Map<String, Value>>()
            .into()
    };
    for (path, body) in [
        ("/v1/models/iris:predict", json!({"instances": many(51)})),
        ("/v1/models/iris:predict", json!({"inputs": column(51)})),
        ("/v1/models/iris:classify", json!({"examples": many(51)})),
    ] {
        let (code, reply) = running.post(path, &body);
        assert_eq!(code, 413, "{path}: {reply}");
        assert!(
            error_of(&reply).contains(
                "the request has 51 instances, above the limit of 50 per request \
                 (--max-instances-per-request)"
            ),
            "{path}: {reply}"
        );
    }
    let (code, reply) = running.post("/v1/models/iris:predict", &json!({"instances": many(50)}));
    assert_eq!(code, 200, "{reply}");
    assert_eq!(reply["predictions"].as_array().unwrap().len(), 50);

    // Concurrent requests each taking the whole budget are all answered in turn.
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                let (code, reply) =
                    running.post("/v1/models/iris:predict", &json!({"instances": many(50)}));
                assert_eq!(code, 200, "{reply}");
            });
        }
    });
}

#[test]
fn a_huge_request_under_the_body_limit_is_refused_before_it_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let running = start_iris_with(dir.path(), Limits::default());
    // 800,000 instances in 14.4 MB, under the 16 MiB body limit.
    let instance = "[5.1,3.5,1.4,0.2]";
    let mut body = String::with_capacity(800_000 * (instance.len() + 1) + 20);
    body.push_str("{\"instances\":[");
    for i in 0..800_000 {
        if i > 0 {
            body.push(',');
        }
        body.push_str(instance);
    }
    body.push_str("]}");
    assert!(
        body.len() < estimator_serve::DEFAULT_BODY_LIMIT,
        "{}",
        body.len()
    );
    let started = std::time::Instant::now();
    let (code, reply) = running.post_raw("/v1/models/iris:predict", &body);
    assert_eq!(code, 413, "{reply}");
    assert!(
        error_of(&reply).contains(
            "800000 instances, above the limit of 10000 per request (--max-instances-per-request)"
        ),
        "{reply}"
    );
    // Counted without decoding: the 108 s and 3.1 GB that decoding and predicting took are
    // not spent. Bounded loosely, for a debug build on a busy machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
