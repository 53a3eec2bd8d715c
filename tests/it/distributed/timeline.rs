//! The timeline: the chief traces the parts of each step asked for, and each gradient
//! bucket's copy, all-reduce and apply, or its pull and push with ps tasks.

use std::path::Path;

use estimator::distribute::TimelineSpec;
use estimator::{EstimatorExt, OptimizerSpec, TrainSpec};
use serde_json::Value;

use super::{classifier, input, multi_worker_with, BATCH};

/// The complete spans of the trace at `path`, after checking they are all the chief's.
pub fn trace_spans(path: &Path) -> Vec<Value> {
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let spans: Vec<Value> = (trace["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "X")
        .cloned()
        .collect();
    assert!(
        spans.iter().all(|s| s["pid"] == 0),
        "only the chief's spans"
    );
    spans
}

/// The spans of `step` named `name`.
pub fn spans_of<'a>(spans: &'a [Value], name: &str, step: u64) -> Vec<&'a Value> {
    (spans.iter())
        .filter(|s| s["name"] == name && s["args"]["step"] == step)
        .collect()
}

fn end(span: &Value) -> f64 {
    span["ts"].as_f64().unwrap() + span["dur"].as_f64().unwrap()
}

/// One span of each of `parts` in `step`, one after another on the training thread.
pub fn assert_parts_in_order(spans: &[Value], step: u64, parts: &[&str]) {
    let parts: Vec<&Value> = (parts.iter())
        .map(|name| match spans_of(spans, name, step).as_slice() {
            [one] => *one,
            other => panic!("step {step}: {} {name} spans", other.len()),
        })
        .collect();
    for pair in parts.windows(2) {
        assert!(
            end(pair[0]) <= pair[1]["ts"].as_f64().unwrap() + 1.0,
            "{pair:?}"
        );
        assert_eq!(pair[0]["tid"], 0);
    }
}

#[test]
fn one_process_traces_the_parts_of_the_steps_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.json");
    let mut estimator = classifier(&dir.path().join("model"), OptimizerSpec::adam(0.01));
    estimator.run_config =
        (estimator.run_config.clone()).with_timeline(TimelineSpec::new(&path).with_steps(2, 3));
    estimator
        .train(|| input(BATCH), TrainSpec::max_steps(20))
        .unwrap();
    let spans = trace_spans(&path);
    for step in 2..5 {
        let parts = ["input", "forward-backward", "update", "after-step"];
        assert_parts_in_order(&spans, step, &parts);
    }
    let steps: std::collections::BTreeSet<u64> = spans
        .iter()
        .map(|s| s["args"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, (2..5).collect());
    assert!(
        spans.iter().all(|s| s["name"] != "sync"),
        "nothing to exchange"
    );
}

#[test]
fn the_chief_traces_each_bucket_of_the_steps_asked_for() {
    // 64-byte buckets: several per step, so the all-reduces run on a thread of their own.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.json");
    let spec = TimelineSpec::new(&path).with_steps(2, 3);
    multi_worker_with(
        &dir.path().join("mwm"),
        OptimizerSpec::adam(0.01),
        2,
        |config| {
            config
                .with_allreduce_bucket_bytes(64)
                .with_timeline(spec.clone())
        },
    );
    let spans = trace_spans(&path);
    let of = |name: &str, step: u64| spans_of(&spans, name, step);
    for step in 2..5 {
        // The loop's parts of the step, one after another on the training thread.
        let parts = ["input", "forward-backward", "sync", "update", "after-step"];
        assert_parts_in_order(&spans, step, &parts);
        let (copies, reduces, applies) =
            (of("copy", step), of("all-reduce", step), of("apply", step));
        assert!(copies.len() > 2, "step {step}: {} buckets", copies.len());
        assert_eq!(reduces.len(), copies.len());
        assert_eq!(applies.len(), copies.len());
        for ((copy, reduce), apply) in copies.iter().zip(&reduces).zip(&applies) {
            assert_eq!(copy["args"]["bucket"], reduce["args"]["bucket"]);
            assert_eq!(reduce["args"]["bucket"], apply["args"]["bucket"]);
            assert_eq!(reduce["tid"], 1, "on the all-reduce thread");
            let compute = reduce["args"]["compute_us"].as_f64().unwrap();
            assert!(compute >= 0.0 && compute <= reduce["dur"].as_f64().unwrap() + 1.0);
            // Each bucket is read, then reduced, then uploaded (to the microsecond).
            assert!(end(copy) <= reduce["ts"].as_f64().unwrap() + 1.0);
            assert!(end(reduce) <= apply["ts"].as_f64().unwrap() + 1.0);
        }
    }
    assert!(of("sync", 1).is_empty() && of("sync", 5).is_empty());
}
