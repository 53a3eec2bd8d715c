//! The timeline: the chief traces the parts of each step asked for and each gradient
//! bucket's copy, all-reduce and apply.

use estimator::distribute::TimelineSpec;
use estimator::OptimizerSpec;

use super::multi_worker_with;

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
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let spans: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert!(
        spans.iter().all(|s| s["pid"] == 0),
        "only the chief's spans"
    );
    let of = |name: &str, step: u64| -> Vec<&serde_json::Value> {
        let named = spans.iter().filter(|s| s["name"] == name);
        named
            .filter(|s| s["args"]["step"] == step)
            .copied()
            .collect()
    };
    let end = |s: &serde_json::Value| s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap();
    for step in 2..5 {
        // The loop's parts of the step, one after another on the training thread.
        let parts = ["input", "forward-backward", "sync", "update", "after-step"];
        let parts: Vec<&serde_json::Value> = parts
            .iter()
            .map(|name| match of(name, step).as_slice() {
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
