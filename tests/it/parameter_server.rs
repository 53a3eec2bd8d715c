//! Training with parameter servers: ps tasks in threads of this process over loopback gRPC,
//! training tasks in threads, exactly as separate processes would run.

use std::net::TcpListener;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use estimator::checkpoint::CheckpointManager;
use estimator::distribute::ps::{
    serve, MinSizePartitioner, Placement, PsClientConfig, PsMode, PsReplica, PsServerConfig,
    VariableOptimizer,
};
use estimator::distribute::{Strategy, TimelineSpec};
use estimator::optimizer::{Clipping, Decay, Regularization, Schedule};
use estimator::summary::{event_files, read_event_file};
use estimator::{EstimatorExt, OptimizerSpec, TrainOutcome, TrainSpec};

use crate::distributed::timeline::{assert_parts_in_order, trace_spans};
use crate::distributed::{classifier, input, max_abs_diff, single, weights, BATCH, STEPS};
use crate::support::TinyClassifier;

/// Ps tasks serving in threads.
struct PsTasks {
    addresses: Vec<String>,
    handles: Vec<JoinHandle<estimator::Result<()>>>,
}

impl PsTasks {
    fn start(n: usize, optimizer: &OptimizerSpec) -> Self {
        let (addresses, handles) = (0..n)
            .map(|_| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let address = listener.local_addr().unwrap().to_string();
                let optimizer = VariableOptimizer::new(optimizer);
                let config = PsServerConfig {
                    chief_name: "chief:0".into(),
                    chief_timeout: Duration::from_secs(20),
                    startup_timeout: Duration::from_secs(20),
                    grace: Duration::from_secs(5),
                    token: None,
                    tls: None,
                };
                let handle = std::thread::spawn(move || serve(listener, optimizer, config));
                (address, handle)
            })
            .unzip();
        Self { addresses, handles }
    }

    /// Every ps task ended by itself, cleanly.
    fn join(self) {
        for handle in self.handles {
            handle.join().unwrap().unwrap();
        }
    }
}

/// `workers` training tasks (the chief first) against `num_ps` ps tasks started for them,
/// until `max_steps`; the ps tasks then end by themselves, cleanly.
fn train(
    model_dir: &Path,
    optimizer: &OptimizerSpec,
    num_ps: usize,
    workers: usize,
    mode: PsMode,
    max_steps: u64,
) -> Vec<TrainOutcome> {
    train_summarising(model_dir, optimizer, num_ps, workers, mode, max_steps, 100)
}

/// [`train`] with a summary every `summary_steps` steps.
fn train_summarising(
    model_dir: &Path,
    optimizer: &OptimizerSpec,
    num_ps: usize,
    workers: usize,
    mode: PsMode,
    max_steps: u64,
    summary_steps: u64,
) -> Vec<TrainOutcome> {
    let configure = |mut estimator: TinyClassifier| {
        estimator.run_config = estimator.run_config.with_save_summary_steps(summary_steps);
        estimator
    };
    train_configured(
        model_dir,
        optimizer,
        num_ps,
        (workers, mode),
        max_steps,
        &configure,
    )
}

/// [`train`] with each task's estimator changed by `configure`.
fn train_configured(
    model_dir: &Path,
    optimizer: &OptimizerSpec,
    num_ps: usize,
    (workers, mode): (usize, PsMode),
    max_steps: u64,
    configure: &dyn Fn(TinyClassifier) -> TinyClassifier,
) -> Vec<TrainOutcome> {
    let ps = PsTasks::start(num_ps, optimizer);
    let names: Vec<String> = std::iter::once("chief:0".to_string())
        .chain((1..workers).map(|w| format!("worker:{}", w - 1)))
        .collect();
    let handles: Vec<_> = (0..workers)
        .map(|rank| {
            let mut estimator = configure(classifier(model_dir, optimizer.clone()));
            estimator.run_config = estimator.run_config.with_ps_mode(mode);
            let config = PsClientConfig {
                peer_timeout: Duration::from_secs(20),
                startup_timeout: Duration::from_secs(20),
                token: None,
                tls: None,
            };
            let replica = PsReplica::connect(&ps.addresses, rank, names.clone(), config).unwrap();
            std::thread::spawn(move || {
                estimator.train_with(
                    || input(BATCH),
                    TrainSpec::max_steps(max_steps),
                    Strategy::ParameterServer(replica),
                )
            })
        })
        .collect();
    let outcomes = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    ps.join();
    outcomes
}

fn placement(model_dir: &Path) -> Placement {
    let (_, checkpoint) = CheckpointManager::new(model_dir, None)
        .latest()
        .unwrap()
        .unwrap();
    serde_json::from_value(checkpoint.meta["placement"].clone()).unwrap()
}

/// The largest difference between the weights the ps tasks trained in `dir/ps` and those one
/// process trains in `dir/single` on batches of `batch`.
fn diff_from_one_process(dir: &Path, optimizer: &OptimizerSpec, batch: usize) -> f32 {
    single(&dir.join("single"), optimizer.clone(), batch);
    max_abs_diff(&weights(&dir.join("ps")), &weights(&dir.join("single")))
}

#[test]
fn sync_ps_with_one_worker_equals_one_process() {
    // The ps tasks apply the schedule at their global step, as one process does.
    let scheduled = OptimizerSpec::sgd(0.1).with_schedule(
        Schedule::decay(Decay::ExponentialDecay {
            decay_steps: 10,
            decay_rate: 0.5,
            staircase: false,
        })
        .with_warmup_steps(5),
    );
    for optimizer in [
        OptimizerSpec::adam(0.01),
        OptimizerSpec::adagrad(0.1),
        OptimizerSpec::sgd(0.1),
        scheduled,
        // Each pushed gradient clipped on the training task, as one process clips its own.
        OptimizerSpec::sgd(0.1).with_clipping(Clipping::by_global_norm(0.01)),
        OptimizerSpec::ftrl(0.1),
        OptimizerSpec::sgd(0.1).with_regularization(Regularization { l1: 0.01, l2: 0.05 }),
        // The output layer's variables by FTRL on their ps, the rest by Adagrad.
        OptimizerSpec::adagrad(0.1).with_part("output", OptimizerSpec::ftrl(0.05)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let outcomes = train(
            &dir.path().join("ps"),
            &optimizer,
            2,
            1,
            PsMode::sync(),
            STEPS,
        );
        assert_eq!(outcomes[0].global_step, STEPS);
        let diff = diff_from_one_process(dir.path(), &optimizer, BATCH);
        assert!(diff <= 1e-6, "{optimizer:?}: max |ps - single| = {diff}");
        assert_eq!(placement(&dir.path().join("ps")).num_ps, 2);
    }
}

#[test]
fn a_frozen_layer_stays_as_built_on_the_ps_tasks_while_the_rest_trains_like_one_process() {
    // The frozen layer crosses to the training task once, at its first pull, and never
    // back: given a gradient, even a zero one, AdamW would decay it and FTRL set it to zero.
    for optimizer in [OptimizerSpec::adamw(0.01), OptimizerSpec::ftrl(0.1)] {
        let frozen = |mut estimator: TinyClassifier| {
            estimator.frozen_hidden = true;
            estimator
        };
        let dir = tempfile::tempdir().unwrap();
        let (ps_dir, single_dir) = (dir.path().join("ps"), dir.path().join("single"));
        let outcomes =
            train_configured(&ps_dir, &optimizer, 2, (1, PsMode::sync()), STEPS, &frozen);
        assert_eq!(outcomes[0].global_step, STEPS);
        let one = frozen(classifier(&single_dir, optimizer.clone()));
        one.train(|| input(BATCH), TrainSpec::max_steps(STEPS))
            .unwrap();
        let hidden = |dir: &Path| -> Vec<_> {
            let all = weights(dir).into_iter();
            all.filter(|(name, _)| name.starts_with("hidden")).collect()
        };
        assert_eq!(hidden(&ps_dir).len(), 2, "weight and bias");
        assert_eq!(hidden(&ps_dir), hidden(&single_dir), "{optimizer:?}");
        let diff = max_abs_diff(&weights(&ps_dir), &weights(&single_dir));
        assert!(diff <= 1e-6, "{optimizer:?}: max |ps - single| = {diff}");
    }
}

#[test]
fn variables_cut_into_blocks_on_three_ps_tasks_train_like_one_process_and_resume_whole() {
    let optimizer = OptimizerSpec::adam(0.01);
    let dir = tempfile::tempdir().unwrap();
    let (ps_dir, single_dir) = (dir.path().join("ps"), dir.path().join("single"));
    // Blocks of 8 bytes or more, one per ps at most: every variable of 3 values or more is
    // cut into 3.
    let cut = |mut estimator: TinyClassifier| {
        let blocks = Some(MinSizePartitioner::new(8));
        estimator.run_config = estimator.run_config.with_variable_partitioner(blocks);
        estimator
    };
    let outcomes = train_configured(&ps_dir, &optimizer, 3, (1, PsMode::sync()), STEPS, &cut);
    assert_eq!(outcomes[0].global_step, STEPS);
    let diff = diff_from_one_process(dir.path(), &optimizer, BATCH);
    assert!(diff <= 1e-6, "max |ps - single| = {diff}");
    let placed = placement(&ps_dir);
    assert!(
        placed.variables.contains_key("hidden.weight/part_2"),
        "{placed:?}"
    );
    assert!(
        weights(&ps_dir)
            .iter()
            .all(|(name, _)| !name.contains("/part_")),
        "checkpoints hold whole variables"
    );
    // Resumed whole on one ps task, with the blocks' Adam moments joined, it goes on as one
    // process does: fresh moments would move the weights by far more than this bound.
    let whole = |estimator: TinyClassifier| estimator;
    let more = 2 * STEPS;
    train_configured(&ps_dir, &optimizer, 1, (1, PsMode::sync()), more, &whole);
    classifier(&single_dir, optimizer)
        .train(|| input(BATCH), TrainSpec::max_steps(more))
        .unwrap();
    let diff = max_abs_diff(&weights(&ps_dir), &weights(&single_dir));
    assert!(diff <= 1e-6, "resumed: max |ps - single| = {diff}");
    assert_eq!(placement(&ps_dir).num_ps, 1);
}

#[test]
fn a_worker_adding_up_two_batches_pushes_what_one_process_with_the_doubled_batch_applies() {
    let optimizer = OptimizerSpec::adam(0.01);
    let dir = tempfile::tempdir().unwrap();
    let two_passes = |mut estimator: TinyClassifier| {
        estimator.run_config = estimator.run_config.with_backward_passes_per_step(2);
        estimator
    };
    let outcomes = train_configured(
        &dir.path().join("ps"),
        &optimizer,
        2,
        (1, PsMode::sync()),
        STEPS,
        &two_passes,
    );
    assert_eq!(outcomes[0].global_step, STEPS);
    let diff = diff_from_one_process(dir.path(), &optimizer, 2 * BATCH);
    assert!(diff <= 1e-5, "max |ps - single| = {diff}");
}

#[test]
fn sync_ps_with_two_workers_equals_one_process_with_the_doubled_batch() {
    let optimizer = OptimizerSpec::adam(0.01);
    let dir = tempfile::tempdir().unwrap();
    let outcomes = train(
        &dir.path().join("ps"),
        &optimizer,
        2,
        2,
        PsMode::sync(),
        STEPS,
    );
    assert!(
        outcomes.iter().all(|o| o.global_step == STEPS),
        "{outcomes:?}"
    );
    assert!(outcomes[0].checkpoint.is_some() && outcomes[1].checkpoint.is_none());
    let diff = diff_from_one_process(dir.path(), &optimizer, 2 * BATCH);
    assert!(diff <= 1e-5, "max |ps - single| = {diff}");
}

#[test]
fn async_ps_stops_at_max_steps_and_every_task_ends_by_itself() {
    let optimizer = OptimizerSpec::adagrad(0.1);
    let dir = tempfile::tempdir().unwrap();
    let outcomes = train_summarising(
        &dir.path().join("ps"),
        &optimizer,
        2,
        3,
        PsMode::default(),
        60,
        10,
    );
    // The ps tasks apply no update past the last step: the chief's final checkpoint is at 60.
    assert_eq!(outcomes[0].global_step, 60);
    let manager = CheckpointManager::new(dir.path().join("ps"), None);
    assert_eq!(manager.latest_step().unwrap(), Some(60));
    // Progress, judged on the final weights: the chief's own last batch may be one of its
    // first when the other workers took most of the steps.
    let metrics = classifier(&dir.path().join("ps"), optimizer)
        .evaluate(|| input(BATCH), Some(8), None, None)
        .unwrap();
    assert_eq!(metrics["global_step"], 60.0);
    let loss = metrics["loss"];
    assert!(loss.is_finite() && loss < 1.0, "loss {loss}");

    // The chief's summaries show the ps tasks' load.
    let scalars: Vec<(String, u64, f64)> = event_files(&dir.path().join("ps"))
        .unwrap()
        .iter()
        .flat_map(|f| crate::summary_support::scalars(&read_event_file(f).unwrap()))
        .collect();
    let values = |tag: &str| -> Vec<f64> {
        scalars
            .iter()
            .filter(|(t, _, _)| t == tag)
            .map(|(_, _, v)| *v)
            .collect()
    };
    for tag in ["ps/push_per_sec", "ps/0/bytes_served", "ps/1/bytes_served"] {
        assert!(
            values(tag).iter().any(|&v| v > 0.0),
            "{tag}: {:?}",
            values(tag)
        );
    }
    assert!(!values("ps/pull_seconds").is_empty());
    assert!(values("ps/staleness").iter().all(|&s| s >= 0.0));
    assert!(!values("ps/staleness").is_empty());
}

#[test]
fn resuming_with_another_number_of_ps_tasks_re_shards_and_continues_exactly() {
    let optimizer = OptimizerSpec::adam(0.01);
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("ps");
    let mut steps_run = Vec::new();
    for (num_ps, max_steps) in [(2, 40), (1, 70), (3, STEPS)] {
        let outcome = train(&model_dir, &optimizer, num_ps, 1, PsMode::sync(), max_steps);
        steps_run.push(outcome[0].steps_run);
        assert_eq!(placement(&model_dir).num_ps, num_ps);
    }
    assert_eq!(
        steps_run,
        vec![40, 30, 30],
        "each run continued where the last stopped"
    );
    let diff = diff_from_one_process(dir.path(), &optimizer, BATCH);
    assert!(diff <= 1e-6, "max |re-sharded - single| = {diff}");
}

#[test]
fn the_chief_traces_each_steps_pull_and_push() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.json");
    let spec = TimelineSpec::new(&path).with_steps(2, 3);
    let configure = |mut estimator: TinyClassifier| {
        estimator.run_config = estimator.run_config.with_timeline(spec.clone());
        estimator
    };
    let optimizer = OptimizerSpec::adam(0.01);
    let ps_dir = dir.path().join("ps");
    train_configured(&ps_dir, &optimizer, 1, (2, PsMode::sync()), 20, &configure);
    // Every task was given the path: the trace is the chief's.
    let spans = trace_spans(&path);
    for step in 2..5 {
        let parts = ["input", "pull", "forward-backward", "push", "after-step"];
        assert_parts_in_order(&spans, step, &parts);
    }
    assert!(
        spans.iter().all(|s| s["name"] != "update"),
        "the ps tasks update"
    );
}
