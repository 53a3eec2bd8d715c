//! Malformed TF_CONFIGs: not JSON, clusters and tasks that cannot be, one address given to
//! two tasks; each refused naming the field.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use super::{bounded, train};
use crate::cli::{assert_user_error, iris};

fn tf_configs() -> Vec<(OsString, &'static str)> {
    let text = |t: &str| OsString::from(t);
    let w = r#""task": {"type": "worker", "index": 0}"#;
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "not valid JSON"),
        ("[]".into(), "must be a JSON object"),
        ("42".into(), "must be a JSON object"),
        (r#""cluster""#.into(), "must be a JSON object"),
        (r#"{"cluster": 5}"#.into(), ".cluster must be an object"),
        (format!(r#"{{"cluster": {{"worker": "a:1"}}, {w}}}"#), ".cluster.worker must be a list"),
        (format!(r#"{{"cluster": {{"worker": [1]}}, {w}}}"#), ".cluster.worker[0] is not"),
        (format!(r#"{{"cluster": {{"worker": ["a"]}}, {w}}}"#), ".cluster.worker[0] = 'a'"),
        (format!(r#"{{"cluster": {{"worker": ["a:"]}}, {w}}}"#), ".cluster.worker[0] = 'a:'"),
        (format!(r#"{{"cluster": {{"worker": [":1"]}}, {w}}}"#), ".cluster.worker[0] = ':1'"),
        (format!(r#"{{"cluster": {{"worker": ["a:99999"]}}, {w}}}"#), "'a:99999'"),
        (format!(r#"{{"cluster": {{"worker": ["a:-1"]}}, {w}}}"#), "'a:-1'"),
        (format!(r#"{{"cluster": {{"worker": ["a:0"]}}, {w}}}"#), "port 0"),
        (format!(r#"{{"cluster": {{"worker": ["a:1", null]}}, {w}}}"#), ".cluster.worker[1]"),
        (format!(r#"{{"cluster": {{"worker": [["a:1"]]}}, {w}}}"#), ".cluster.worker[0]"),
        (format!(r#"{{"cluster": {{"worker": {{"1": "a:1"}}}}, {w}}}"#), "lacks index 0"),
        (format!(r#"{{"cluster": {{"worker": {{"x": "a:1"}}}}, {w}}}"#), "key 'x'"),
        (format!(r#"{{"cluster": {{"gpu": ["a:1"]}}, {w}}}"#), ".cluster.gpu"),
        (r#"{"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}}"#.into(), ".cluster.chief has 2 entries"),
        (r#"{"cluster": {"chief": []}, "task": {"type": "chief"}}"#.into(), ".cluster.chief has 0 entries"),
        (r#"{"cluster": {"chief": "a:1"}, "task": {"type": "chief"}}"#.into(), ".cluster.chief must be a list"),
        (r#"{"cluster": {"chief": ["a:1"], "master": ["b:1"]}, "task": {"type": "chief"}}"#.into(), "both"),
        (r#"{"cluster": {"worker": ["a:1"], "evaluator": ["b:1", "c:1"]}, "task": {"type": "evaluator"}}"#.into(), ".cluster.evaluator has 2 entries"),
        (r#"{"cluster": {"worker": ["a:1"]}}"#.into(), ".task is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": 5}"#.into(), ".task is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"index": 0}}"#.into(), ".task.type is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": 7}}"#.into(), ".task.type is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "boss"}}"#.into(), ".task.type = 'boss'"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}}"#.into(), ".task.index = -1"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "x"}}"#.into(), ".task.index = 'x'"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1.5}}"#.into(), ".task.index = 1.5"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}}"#.into(), ".task.index = true"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}"#.into(), ".task.index = 3 but cluster.worker has 1 entry"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 18446744073709551616}}"#.into(), ".task.index"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}}"#.into(), "cluster.chief has 0 entries"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}}"#.into(), "cluster.ps has 0 entries"),
        (r#"{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps"}}"#.into(), "neither a chief nor a worker"),
        (r#"{"cluster": {"chief": ["h:1"], "worker": ["h:1"]}, "task": {"type": "chief"}}"#.into(), "gives chief:0 and worker:0 the same address 'h:1'"),
        (format!(r#"{{"cluster": {{"worker": ["h:1", "h:1"]}}, {w}}}"#), "gives worker:0 and worker:1 the same address"),
        (format!(r#"{{"cluster": {{"worker": ["h:1"], "ps": ["h:2", "h:2"]}}, {w}}}"#), "gives ps:0 and ps:1"),
        (format!(r#"{{"cluster": {{"worker": ["h:1"], "evaluator": ["h:1"]}}, {w}}}"#), "gives worker:0 and evaluator:0"),
        (format!(r#"{{"cluster": {{"worker": ["127.0.0.1:5000", "127.0.0.1:05000"]}}, {w}}}"#), "gives worker:0 '127.0.0.1:5000' and worker:1 '127.0.0.1:05000': the same address"),
        (r#"{"cluster": {"chief": ["localhost:5000"], "worker": ["127.0.0.1:5000"]}, "task": {"type": "chief"}}"#.into(), "gives chief:0 'localhost:5000' and worker:0 '127.0.0.1:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["[::1]:5000"], "ps": ["LOCALHOST:5000"]}}, {w}}}"#), "gives worker:0 '[::1]:5000' and ps:0 'LOCALHOST:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["Node-1:5000", "node-1:5000"]}}, {w}}}"#), "gives worker:0 'Node-1:5000' and worker:1 'node-1:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["a:00"]}}, {w}}}"#), "port 0"),
        (format!(r#"{{"cluster": {{"worker": ["a:+1"]}}, {w}}}"#), "'a:+1'"),
        (r#"{"cluster": {}, "task": {"type": "ps", "index": 0}}"#.into(), ".task.type = 'ps' but .cluster names no task"),
        (r#"{"task": {"type": "chief", "index": 0}}"#.into(), ".task.type = 'chief' but .cluster names no task"),
        (r#"{"cluster": {}, "task": {"type": "worker", "index": 1}}"#.into(), ".task.index = 1 but .cluster names no task"),
        (r#"{"cluster": {}, "task": {"type": "worker", "index": 99999999999999999999}}"#.into(), ".task.index = 1e+20 is not a non-negative integer"),
        (r#"{"cluster": {}, "task": 5}"#.into(), ".task = 5 is not an object"),
    ];
    let mut all: Vec<(OsString, &str)> = cases.into_iter().map(|(t, n)| (text(&t), n)).collect();
    all.push((
        OsString::from_vec(vec![0xff, 0xfe, b'{']),
        "not valid UTF-8",
    ));
    all
}

#[test]
fn malformed_tf_configs_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = tf_configs();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    for (i, (tf_config, needle)) in cases.into_iter().enumerate() {
        let mut cmd = train(&dir.path().join(format!("m{i}")), &iris_train, &[]);
        cmd.env("TF_CONFIG", &tf_config);
        let output = bounded(&mut cmd);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.contains("TF_CONFIG"), "case {i}: {stderr}");
        assert_user_error(output, needle);
    }
}
