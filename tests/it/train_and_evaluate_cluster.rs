//! train_and_evaluate and train as the tasks of a cluster described in a ClusterConfig:
//! chief and evaluator splitting the work, configuration errors, every role from `train`.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use estimator::cluster::ClusterConfig;
use estimator::evaluator::TrainFinished;
use estimator::{train_and_evaluate_in, EstimatorExt, EvalSpec, Exporter, TrainSpec};

use crate::support::{eval_input, train_input};
use crate::train_and_evaluate::{classifier, exported_steps, history_steps, short_input};

/// `N` ports free on 127.0.0.1 now, all different (every listener held until all are bound).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [std::net::TcpListener; N] =
        std::array::from_fn(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

fn task(tf_config: &str) -> ClusterConfig {
    ClusterConfig::parse(tf_config).unwrap()
}

#[test]
fn a_chief_and_an_evaluator_task_split_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 100);
    let [chief] = free_ports();
    let cluster = format!(r#"{{"chief": ["127.0.0.1:{chief}"]}}"#);
    let chief = task(&format!(
        r#"{{"cluster": {cluster}, "task": {{"type": "chief", "index": 0}}}}"#
    ));
    let evaluator = task(&format!(
        r#"{{"cluster": {cluster}, "task": {{"type": "evaluator", "index": 0}}}}"#
    ));
    let (tx, rx) = mpsc::channel();
    let evaluator_est = est.clone();
    std::thread::spawn(move || {
        let spec = EvalSpec::new().with_exporter(Exporter::final_exporter("final"));
        let _ = tx.send(train_and_evaluate_in(
            &evaluator,
            &evaluator_est,
            short_input,
            TrainSpec::max_steps(100),
            eval_input,
            spec,
        ));
    });
    // The input ends at step 15: only the chief's marker tells the evaluator to stop.
    let trained = train_and_evaluate_in(
        &chief,
        &est,
        short_input,
        TrainSpec::max_steps(100),
        eval_input,
        EvalSpec::new(),
    )
    .unwrap();
    assert_eq!(trained.metrics, None, "the chief does not evaluate");
    assert_eq!(trained.trained.map(|t| t.global_step), Some(15));
    assert_eq!(
        TrainFinished::read(dir.path()).unwrap(),
        Some(TrainFinished {
            global_step: 15,
            max_steps: 100
        })
    );
    let metrics = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the evaluator returns by itself")
        .unwrap()
        .metrics
        .unwrap();
    assert_eq!(metrics["global_step"], 15.0);
    assert_eq!(history_steps(&dir.path().join("eval")), [15]);
    assert_eq!(exported_steps(dir.path(), "final"), [15]);
}

#[test]
fn a_cluster_needs_max_steps_and_a_ps_task_a_free_port() {
    let dir = tempfile::tempdir().unwrap();
    let est = classifier(dir.path(), 10);
    let evaluator =
        task(r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator", "index": 0}}"#);
    let err = train_and_evaluate_in(
        &evaluator,
        &est,
        train_input,
        TrainSpec::steps(10),
        eval_input,
        EvalSpec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("TrainSpec::max_steps"), "{err}");
    assert!(!err.contains('\n'), "{err}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let ps = task(&format!(
        r#"{{"cluster": {{"chief": ["c:1"], "ps": ["{address}"]}}, "task": {{"type": "ps"}}}}"#
    ));
    let err = train_and_evaluate_in(
        &ps,
        &est,
        train_input,
        TrainSpec::max_steps(10),
        eval_input,
        EvalSpec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&format!("ps:0 cannot listen on {address}")),
        "{err}"
    );
}

#[test]
fn train_alone_runs_every_task_of_a_cluster_with_ps_and_an_evaluator() {
    // A program that only calls `train`, run as each task of chief + worker + ps + evaluator:
    // the training tasks train, the ps task serves until the chief ends the job, the
    // evaluator has nothing to do — and every one returns Ok by itself.
    let dir = tempfile::tempdir().unwrap();
    let [chief, worker, ps] = free_ports();
    let cluster = format!(
        r#"{{"chief": ["127.0.0.1:{chief}"], "worker": ["127.0.0.1:{worker}"], "ps": ["127.0.0.1:{ps}"]}}"#
    );
    let as_task = |kind: &str| {
        let mut est = classifier(dir.path(), 10);
        let config = task(&format!(
            r#"{{"cluster": {cluster}, "task": {{"type": "{kind}", "index": 0}}}}"#
        ));
        est.run_config = est
            .run_config
            .clone()
            .with_peer_timeout_secs(20)
            .with_startup_timeout_secs(30)
            .with_cluster(config);
        est
    };
    let (tx, rx) = mpsc::channel();
    for kind in ["ps", "worker", "evaluator"] {
        let est = as_task(kind);
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send((kind, est.train(train_input, TrainSpec::max_steps(30))));
        });
    }
    let chief = as_task("chief")
        .train(train_input, TrainSpec::max_steps(30))
        .unwrap();
    assert_eq!(chief.global_step, 30);
    assert!(chief.steps_run > 0 && chief.steps_run <= 30, "{chief:?}");
    let mut others = BTreeMap::new();
    for _ in 0..3 {
        let (kind, outcome) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("every task returns by itself");
        others.insert(kind, outcome.unwrap());
    }
    assert_eq!(others["ps"], estimator::TrainOutcome::default());
    assert_eq!(others["evaluator"], estimator::TrainOutcome::default());
    let worker = &others["worker"];
    assert_eq!(
        chief.steps_run + worker.steps_run,
        30,
        "the two training tasks' pushes make the 30 global steps"
    );
    assert!(worker.checkpoint.is_none(), "only the chief writes");
}
