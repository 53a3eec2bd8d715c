//! The run loop's ps driver against in-memory ps tasks: the chief realigning ps tasks whose
//! steps parted, re-initialising a restarted ps while a worker waits for it, checkpointing
//! at the step other workers moved the ps tasks to, what crosses the wire each step, and
//! variables cut into blocks that the ps tasks hold apart.

use std::sync::{mpsc, Mutex};

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::super::{Ready, StepSync, Synced};
use super::PsSync;
use crate::checkpoint::CheckpointManager;
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{
    Command, InMemoryParameterServers, InMemoryPs, Intercepted, MinSizePartitioner, PsClient,
    PsClientConfig, PsMode, PsReplica, PsSession, PullAnswer, PushAnswer, VariableOptimizer,
};
use crate::distribute::{LocalStep, StepLoss};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::run_loop::train_state::TrainState;
use crate::state::parameter_values;

fn config() -> PsClientConfig {
    PsClientConfig::for_tests()
}

fn start(num_ps: usize) -> InMemoryPs {
    InMemoryPs::start(num_ps, sgd, "chief:0")
}

fn sgd() -> VariableOptimizer {
    VariableOptimizer::new(&OptimizerSpec::sgd(0.1))
}

fn names() -> Vec<String> {
    vec!["chief:0".to_string(), "worker:0".to_string()]
}

/// The chief's driver through `client`, checkpointing into `dir`.
fn chief(client: impl PsClient + 'static, dir: &std::path::Path) -> PsSync {
    let replica = PsReplica::new(Box::new(client), 0, names());
    PsSync::new(
        replica,
        PsMode::default(),
        None,
        CheckpointManager::new(dir, None),
    )
}

/// The chief's client, whose first initialisation puts ps:1 `ahead` steps past ps:0: ps
/// tasks whose steps parted.
fn parted(inner: InMemoryParameterServers, ahead: u64) -> Intercepted {
    let ahead = Mutex::new(Some(ahead));
    Intercepted::new(inner).on_init(move |inner, mut inits| {
        if let Some(ahead) = ahead.lock().unwrap().take() {
            inits[1].global_step += ahead;
        }
        inner.init(inits)
    })
}

fn steps(ps: &InMemoryPs) -> Vec<u64> {
    let snapshots = ps.client(0, config()).snapshot().unwrap();
    snapshots.iter().map(|s| s.step).collect()
}

type State = TrainState<B, Linear<B>>;

fn state(global_step: u64) -> State {
    let device = Default::default();
    TrainState {
        model: LinearConfig::new(3, 1).init(&device),
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.1)),
        sync_replicas: 1,
        global_step,
        device,
        loss_scale: None,
    }
}

fn gradients(model: &Linear<B>) -> GradientsParams {
    let device = Default::default();
    let x = Tensor::<B, 2>::ones([2, 3], &device);
    let loss = model.forward(x).sum();
    GradientsParams::from_grads(loss.backward(), model)
}

#[test]
fn a_chief_told_done_by_a_ps_ahead_of_the_others_realigns_them_and_trains_to_the_last_step() {
    let ps = start(2);
    let client = parted(ps.client(0, config()), 3);
    let replica = PsReplica::new(Box::new(client), 0, vec!["chief:0".to_string()]);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = PsSync::new(
        replica,
        PsMode::default(),
        None,
        CheckpointManager::new(dir.path(), None),
    );
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, state(0), &|_| 5).unwrap();
    assert_eq!(steps(&ps), [0, 3], "parted from the start");
    let mut outcomes = Vec::new();
    for _ in 0..20 {
        let (ready, go) = sync.ready(state, true).unwrap();
        state = ready;
        if matches!(go, Ready::Stop) {
            break;
        }
        let local = LocalStep {
            grads: gradients(&state.model),
            loss: StepLoss::Known(0.0),
        };
        let (next, synced) = sync.exchange(state, Some(local)).unwrap();
        state = next;
        outcomes.push(match synced {
            Synced::Applied { .. } => "applied",
            Synced::Skipped => "realigned",
            Synced::Stop => "stop",
            Synced::Apply(_) => "apply here",
        });
        if outcomes.last() == Some(&"stop") {
            break;
        }
    }
    // ps:1 reaches 5 after two pushes and says the third one finds the job done, which
    // ps:0 applied (0 → 3); the chief puts both back at 3, and two more updates take both
    // to 5.
    assert_eq!(
        outcomes,
        [
            "applied",
            "applied",
            "realigned",
            "applied",
            "applied",
            "stop"
        ]
    );
    assert_eq!(steps(&ps), [5, 5]);
    assert_eq!(state.global_step, 5);
    StepSync::<B, Linear<B>>::finish(&mut sync, &state).expect("a job at its last step ends");
}

/// One training step of the chief's driver: what the exchange did.
fn step(sync: &mut PsSync, state: State) -> (State, &'static str) {
    let (state, go) = sync.ready(state, true).unwrap();
    assert!(matches!(go, Ready::Compute { .. }), "the job goes on");
    let local = LocalStep {
        grads: gradients(&state.model),
        loss: StepLoss::Known(0.0),
    };
    let (state, synced) = sync.exchange(state, Some(local)).unwrap();
    let synced = match synced {
        Synced::Applied { .. } => "applied",
        Synced::Skipped => "skipped",
        Synced::Stop => "stop",
        Synced::Apply(_) => "apply here",
    };
    (state, synced)
}

#[test]
fn the_chief_puts_its_checkpoint_back_on_a_restarted_ps_while_a_worker_waits_for_it() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, state(0), &|_| 100).unwrap();
    let (sent, pulls) = mpsc::channel();
    let sent = Mutex::new(sent);
    let reporting = Intercepted::new(ps.client(1, config())).on_pull(move |_| {
        let _ = sent.lock().unwrap().send(());
    });
    let mut worker = PsSession::new(
        PsReplica::new(Box::new(reporting), 1, names()),
        PsMode::default(),
    );
    assert!(matches!(
        worker.pull().unwrap(),
        PullAnswer::Values { step: 0, .. }
    ));
    pulls.recv().unwrap();
    for _ in 0..2 {
        let synced;
        (state, synced) = step(&mut sync, state);
        assert_eq!(synced, "applied");
    }
    let (next, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, state, None).unwrap();
    CheckpointManager::new(dir.path(), None)
        .save(&checkpoint)
        .unwrap();
    let saved = parameter_values(&next.model);
    let (state, synced) = step(&mut sync, next);
    assert_eq!((synced, state.global_step), ("applied", 3));
    ps.restart(1, sgd());
    let state = std::thread::scope(|scope| {
        // The worker's pull waits on ps:1 for the chief to put the variables back.
        let waiting = scope.spawn(|| worker.pull());
        pulls.recv().unwrap();
        // The chief's next step brings back the values of its last push; its push finds
        // ps:1 empty, and it puts the checkpoint back on both.
        let (state, synced) = step(&mut sync, state);
        assert_eq!((synced, state.global_step), ("skipped", 2));
        let (state, go) = sync.ready(state, true).unwrap();
        assert!(
            matches!(go, Ready::Compute { seed_step: 2 }),
            "back at the checkpoint"
        );
        assert_eq!(state.global_step, 2);
        let PullAnswer::Values { step, values } = waiting.join().unwrap().unwrap() else {
            panic!("the worker's pull gives values");
        };
        assert_eq!(step, 2);
        for (path, (_, v)) in &saved {
            assert_eq!(&values[path], v, "{path} as checkpointed");
        }
        state
    });
    assert_eq!(steps(&ps), [2, 2]);
    let grads: Vec<_> = parameter_values(&state.model)
        .into_iter()
        .map(|(path, (_, v))| (path, vec![0.0; v.len()]))
        .collect();
    assert_eq!(
        worker.push(Vec::new(), grads).unwrap(),
        PushAnswer::Applied(3)
    );
}

#[test]
fn the_chiefs_checkpoint_takes_the_ps_step_that_other_workers_moved_on() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let start = state(0);
    let (start, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    let mut worker = PsSession::new(
        PsReplica::in_memory(&ps, 1, names(), config()),
        PsMode::default(),
    );
    let mut pulled = Default::default();
    for expected in 0..=3 {
        let PullAnswer::Values { step, values } = worker.pull().unwrap() else {
            panic!("a pull gives values");
        };
        assert_eq!(step, expected);
        pulled = values;
        if expected < 3 {
            let grads = pulled
                .iter()
                .map(|(path, v)| (path.clone(), vec![1.0; v.len()]));
            let answer = worker.push(Vec::new(), grads.collect::<Vec<_>>()).unwrap();
            assert_eq!(answer, PushAnswer::Applied(expected + 1));
        }
    }
    // The chief last saw step 0; its checkpoint, and its state, are at the ps tasks' 3.
    let (state, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, start, None).unwrap();
    assert_eq!(checkpoint.global_step, 3);
    assert_eq!(state.global_step, 3);
    for (path, (_, v)) in parameter_values(&state.model) {
        assert_eq!(v, pulled[&path], "{path}");
    }
}

#[derive(Module, Debug)]
struct Normed<B: Backend> {
    norm: BatchNorm<B>,
    frozen: Linear<B>,
    out: Linear<B>,
}

#[test]
fn frozen_values_cross_to_the_ps_tasks_once_and_running_statistics_as_they_move() {
    let ps = start(1);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let device = Default::default();
    let built = Normed {
        norm: BatchNormConfig::new(4).init(&device),
        frozen: LinearConfig::new(4, 2).init(&device).no_grad(),
        out: LinearConfig::new(4, 2).init(&device),
    };
    let frozen = built.frozen.weight.val().into_data();
    let start = TrainState {
        model: built,
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.1)),
        sync_replicas: 1,
        global_step: 0,
        device,
        loss_scale: None,
    };
    let (mut state, _) = StepSync::<B, Normed<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    let counters = || ps.client(0, config()).control(Command::Heartbeat).unwrap()[0];
    let mut bytes = Vec::new();
    for step in 0..4 {
        let before = counters();
        let go;
        (state, go) = sync.ready(state, true).unwrap();
        assert!(matches!(go, Ready::Compute { .. }));
        let x = Tensor::<B, 2>::from_data(
            TensorData::new(
                (0..32).map(|i| ((i * 7 + step) % 11) as f32).collect(),
                [8, 4],
            ),
            &device,
        );
        let model = &state.model;
        let y = model.out.forward(model.norm.forward(x.clone())) + model.frozen.forward(x);
        let grads = GradientsParams::from_grads(y.sum().backward(), model);
        let moved = state.model.norm.running_mean.value_sync().into_data();
        let local = LocalStep {
            grads,
            loss: StepLoss::Known(0.0),
        };
        let synced;
        (state, synced) = sync.exchange(state, Some(local)).unwrap();
        assert!(matches!(synced, Synced::Applied { .. }));
        let after = counters();
        bytes.push((
            after.bytes_served - before.bytes_served,
            after.bytes_received - before.bytes_received,
        ));
        let on_ps = ps
            .client(0, config())
            .snapshot()
            .unwrap()
            .remove(0)
            .variables;
        let on_ps = |path: &str| TensorData::new(on_ps[path].1.clone(), on_ps[path].0.clone());
        assert_eq!(
            on_ps("norm.running_mean"),
            moved,
            "this step's, at step {step}"
        );
        assert_eq!(on_ps("frozen.weight"), frozen);
    }
    // Values of 4 (gamma, beta, running mean and variance), 8 + 2 trained (`out`), 8 + 2
    // frozen, 4 bytes each. The first pull brings all 36 (144 bytes); every push sends the
    // 18 trained values' gradients and the 8 running statistics, and its answer brings back
    // those 26 values (104 bytes), the next step's pull.
    assert_eq!(
        bytes,
        [(144 + 104, 104), (104, 104), (104, 104), (104, 104)]
    );
    assert_eq!(state.model.frozen.weight.val().into_data(), frozen);
}

/// `model`, a 6 → 3 layer, trained with Adam through 2 in-memory ps tasks, its weight (72
/// bytes) cut into blocks of 16 bytes or more when `partitioner` says: the ps tasks after 3
/// steps, and the chief's state gathered from them.
fn adam_through_two_ps(
    model: Linear<B>,
    partitioner: Option<MinSizePartitioner>,
) -> (InMemoryPs, State) {
    let spec = OptimizerSpec::adam(0.05);
    let ps = InMemoryPs::start(2, || VariableOptimizer::new(&spec), "chief:0");
    let dir = tempfile::tempdir().unwrap();
    let replica = PsReplica::in_memory(&ps, 0, vec!["chief:0".to_string()], config());
    let manager = CheckpointManager::new(dir.path(), None);
    let mut sync = PsSync::new(replica, PsMode::default(), partitioner, manager);
    let device = Default::default();
    let start = TrainState {
        model,
        optimizer: Optimizer::new(&spec),
        sync_replicas: 1,
        global_step: 0,
        device,
        loss_scale: None,
    };
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    for step in 0..3 {
        let go;
        (state, go) = sync.ready(state, true).unwrap();
        assert!(matches!(go, Ready::Compute { .. }));
        let x: Vec<f32> = (0..12).map(|i| ((i * 5 + step) % 7) as f32 - 3.0).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(x, [2, 6]), &device);
        let loss = state.model.forward(x).powi_scalar(2).sum();
        let local = LocalStep {
            grads: GradientsParams::from_grads(loss.backward(), &state.model),
            loss: StepLoss::Known(0.0),
        };
        let synced;
        (state, synced) = sync.exchange(state, Some(local)).unwrap();
        assert!(matches!(synced, Synced::Applied { .. }));
    }
    let (state, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, state, None).unwrap();
    assert_eq!(checkpoint.global_step, 3);
    (ps, state)
}

#[test]
fn a_weight_cut_into_blocks_on_two_ps_tasks_trains_and_checkpoints_as_the_whole() {
    let blocks = MinSizePartitioner::new(16);
    let model: Linear<B> = LinearConfig::new(6, 3).init(&Default::default());
    // Burn initialises parameters when first read: once, before the two runs share them.
    let built = parameter_values(&model);
    let (cut_ps, cut) = adam_through_two_ps(model.clone(), Some(blocks));
    let (whole_ps, whole) = adam_through_two_ps(model, None);
    let held = |ps: &InMemoryPs| -> Vec<Vec<String>> {
        let snapshots = ps.client(0, config()).snapshot().unwrap();
        snapshots
            .into_iter()
            .map(|s| s.variables.into_keys().collect())
            .collect()
    };
    // Each ps holds a block of the weight; the bias (12 bytes) stays whole.
    assert_eq!(
        held(&cut_ps),
        [vec!["bias", "weight/part_0"], vec!["weight/part_1"]]
    );
    assert_eq!(held(&whole_ps), [vec!["weight"], vec!["bias"]]);
    assert_ne!(parameter_values(&cut.model), built, "trained");
    // Adam's update is elementwise: the same values and, gathered, the same state bytes.
    assert_eq!(parameter_values(&cut.model), parameter_values(&whole.model));
    assert_eq!(
        cut.optimizer.state_bytes().unwrap(),
        whole.optimizer.state_bytes().unwrap()
    );
}

#[test]
fn a_block_that_alone_changed_goes_into_the_values_the_task_holds() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let replica = PsReplica::in_memory(&ps, 0, names(), config());
    let blocks = Some(MinSizePartitioner::new(4));
    let manager = CheckpointManager::new(dir.path(), None);
    let mut chief = PsSync::new(replica, PsMode::default(), blocks, manager);
    // A 3 → 1 layer: its weight is 3 rows of one value, cut into 2 blocks of 2 and 1 rows.
    let (_, _) = StepSync::<B, Linear<B>>::prepare(&mut chief, state(0), &|_| 100).unwrap();
    let replica = PsReplica::in_memory(&ps, 1, names(), config());
    let manager = CheckpointManager::new(dir.path(), None);
    let mut worker = PsSync::new(replica, PsMode::default(), blocks, manager);
    let (held, _) = worker.ready(state(0), true).unwrap();
    let before = parameter_values(&held.model)["weight"].1.clone();
    // Only the second block moves: its ps answers the next pull with it alone.
    let pushed = worker
        .session
        .push(Vec::new(), vec![("weight/part_1".to_string(), vec![1.0])])
        .unwrap();
    assert_eq!(pushed, PushAnswer::Applied(1));
    let (held, _) = worker.ready(held, true).unwrap();
    let after = parameter_values(&held.model)["weight"].1.clone();
    assert_eq!(after[..2], before[..2], "the first block as it was held");
    assert!((after[2] - (before[2] - 0.1)).abs() < 1e-6, "{after:?}");
}
