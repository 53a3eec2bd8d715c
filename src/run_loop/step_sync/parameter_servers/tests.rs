//! A training task's session against in-memory ps tasks, with the chief's initialisation
//! caught half-way.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::session::{ModelPull, PsSession, PushVerdict};
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{
    Command, ControlReply, InMemoryParameterServers, InMemoryPs, InitRequest, PsClient,
    PsClientConfig, PsError, PsMode, PsReplica, PullReply, PushReply, PushRequest, SnapshotReply,
    VariableOptimizer,
};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::run_loop::train_state::TrainState;

fn config() -> PsClientConfig {
    PsClientConfig {
        peer_timeout: Duration::from_secs(20),
        startup_timeout: Duration::from_secs(20),
        token: None,
        tls: None,
    }
}

/// What an intercepted client does with the chief's initialisations.
type InitHook =
    Box<dyn Fn(&InMemoryParameterServers, Vec<InitRequest>) -> Result<(), PsError> + Send + Sync>;

/// The chief's client, passing its initialisations through `hook`.
struct Intercepted {
    inner: InMemoryParameterServers,
    hook: InitHook,
}

impl std::fmt::Debug for Intercepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercepted")
            .field("inner", &self.inner)
            .finish()
    }
}

impl PsClient for Intercepted {
    fn init(&self, requests: Vec<InitRequest>) -> Result<(), PsError> {
        (self.hook)(&self.inner, requests)
    }
    fn pull(&self, wait: Duration) -> Result<Vec<PullReply>, PsError> {
        self.inner.pull(wait)
    }
    fn push(&self, requests: Vec<PushRequest>) -> Result<Vec<PushReply>, PsError> {
        self.inner.push(requests)
    }
    fn snapshot(&self) -> Result<Vec<SnapshotReply>, PsError> {
        self.inner.snapshot()
    }
    fn control(&self, command: Command) -> Result<Vec<ControlReply>, PsError> {
        self.inner.control(command)
    }
    fn start_heartbeat(&mut self, every: Duration) {
        self.inner.start_heartbeat(every)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn worker(&self) -> u32 {
        self.inner.worker()
    }
    fn config(&self) -> &PsClientConfig {
        self.inner.config()
    }
}

/// The chief's client, which initialises ps:1 at once but ps:0 (given its previous request
/// again meanwhile) only when the test says (`complete`): a chief caught between the two ps
/// tasks.
fn halfway_init(
    inner: InMemoryParameterServers,
    held_back: Arc<Mutex<Option<Vec<InitRequest>>>>,
) -> Intercepted {
    let previous: Mutex<Option<Vec<InitRequest>>> = Mutex::new(None);
    let hook = move |inner: &InMemoryParameterServers, requests: Vec<InitRequest>| {
        let mut previous = previous.lock().unwrap();
        match previous.replace(requests.clone()) {
            None => inner.init(requests),
            Some(mut before) => {
                before[1] = requests[1].clone();
                *held_back.lock().unwrap() = Some(requests);
                inner.init(before)
            }
        }
    };
    Intercepted {
        inner,
        hook: Box::new(hook),
    }
}

/// Completes the initialisation [`halfway_init`] held back.
fn complete(inner: &InMemoryParameterServers, held_back: &Mutex<Option<Vec<InitRequest>>>) {
    let requests = held_back
        .lock()
        .unwrap()
        .take()
        .expect("an initialisation held back");
    inner.init(requests).unwrap();
}

/// The chief's client, whose first initialisation puts ps:1 `ahead` steps past ps:0: ps
/// tasks whose steps parted.
fn parted(inner: InMemoryParameterServers, ahead: u64) -> Intercepted {
    let ahead = Mutex::new(Some(ahead));
    let hook = move |inner: &InMemoryParameterServers, mut requests: Vec<InitRequest>| {
        if let Some(ahead) = ahead.lock().unwrap().take() {
            requests[1].global_step += ahead;
        }
        inner.init(requests)
    };
    Intercepted {
        inner,
        hook: Box::new(hook),
    }
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
    }
}

fn gradients(model: &Linear<B>) -> GradientsParams {
    let device = Default::default();
    let x = Tensor::<B, 2>::ones([2, 3], &device);
    let loss = model.forward(x).sum();
    GradientsParams::from_grads(loss.backward(), model)
}

#[test]
fn a_pull_during_the_chiefs_initialisation_waits_for_every_ps_so_their_steps_stay_equal() {
    let names = vec!["chief:0".to_string(), "worker:0".to_string()];
    let ps = InMemoryPs::start(
        2,
        || VariableOptimizer::new(&OptimizerSpec::sgd(0.1)),
        "chief:0",
    );
    let held_back = Arc::new(Mutex::new(None));
    let chief_client = halfway_init(ps.client(0, config()), Arc::clone(&held_back));
    let chief_replica = PsReplica::new(Box::new(chief_client), 0, names.clone());
    let mut chief = PsSession::new(chief_replica, PsMode::default());
    let worker_replica = PsReplica::in_memory(&ps, 1, names, config());
    let mut worker = PsSession::new(worker_replica, PsMode::default());

    let start = state(0);
    chief.initialise(&start, None, 100).unwrap();
    let Ok(ModelPull::Model(model, 0)) = worker.pull(start.model.clone()) else {
        panic!("the first pull gives the initial values");
    };
    // The chief puts a checkpoint at step 5 back on the ps tasks; only ps:1 has it so far.
    chief.initialise(&state(5), None, 100).unwrap();
    let completer = ps.client(0, config());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            complete(&completer, &held_back);
        });
        let Ok(ModelPull::Model(model, step)) = worker.pull(model) else {
            panic!("a pull after the initialisation gives values");
        };
        assert_eq!(step, 5);
        assert!(
            held_back.lock().unwrap().is_none(),
            "the pull returned before every ps was initialised"
        );
        let grads = gradients(&model);
        assert!(matches!(
            worker.push(&model, &grads),
            Ok(PushVerdict::Applied(6))
        ));
    });
    let steps: Vec<u64> = ps
        .client(0, config())
        .snapshot()
        .unwrap()
        .iter()
        .map(|s| s.step)
        .collect();
    assert_eq!(steps, [6, 6]);
}

#[test]
fn a_synchronous_push_that_times_out_names_the_task_that_pushed_nothing() {
    let names = vec!["chief:0".to_string(), "worker:0".to_string()];
    let ps = InMemoryPs::start(
        1,
        || VariableOptimizer::new(&OptimizerSpec::sgd(0.1)),
        "chief:0",
    );
    let quick = PsClientConfig {
        peer_timeout: Duration::from_millis(300),
        ..config()
    };
    let chief_replica = PsReplica::in_memory(&ps, 0, names.clone(), quick.clone());
    let mut chief = PsSession::new(chief_replica, PsMode::sync());
    let start = state(0);
    chief.initialise(&start, None, 100).unwrap();
    let Ok(ModelPull::Model(model, 0)) = chief.pull(start.model.clone()) else {
        panic!("the first pull gives the initial values");
    };
    // worker:0 never pushes: the chief's synchronous update cannot gather its gradients.
    let err = chief.push(&model, &gradients(&model)).err().unwrap();
    assert_eq!(err.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
    let message = err.to_string();
    assert!(
        message.starts_with("lost worker:0: step 0 gathered 1 of the 2"),
        "{message}"
    );
}

#[test]
fn the_chiefs_checkpoint_takes_the_ps_step_that_other_workers_moved_on() {
    let names = vec!["chief:0".to_string(), "worker:0".to_string()];
    let ps = InMemoryPs::start(
        2,
        || VariableOptimizer::new(&OptimizerSpec::sgd(0.1)),
        "chief:0",
    );
    let mut chief = PsSession::new(
        PsReplica::in_memory(&ps, 0, names.clone(), config()),
        PsMode::default(),
    );
    let mut worker = PsSession::new(
        PsReplica::in_memory(&ps, 1, names, config()),
        PsMode::default(),
    );
    let start = state(0);
    chief.initialise(&start, None, 100).unwrap();
    let Ok(ModelPull::Model(mut model, 0)) = worker.pull(start.model.clone()) else {
        panic!("the first pull gives the initial values");
    };
    for expected in 1..=3 {
        let grads = gradients(&model);
        assert!(matches!(
            worker.push(&model, &grads),
            Ok(PushVerdict::Applied(step)) if step == expected
        ));
        let Ok(ModelPull::Model(next, _)) = worker.pull(model) else {
            panic!("a pull gives values");
        };
        model = next;
    }
    // The chief last saw step 0; its checkpoint, and its state, are at the ps tasks' 3.
    let (state, checkpoint) = chief.checkpoint(start, None).unwrap();
    assert_eq!(checkpoint.global_step, 3);
    assert_eq!(state.global_step, 3);
    assert_eq!(
        state.model.weight.val().into_data(),
        model.weight.val().into_data()
    );
}

#[test]
fn a_chief_told_done_by_a_ps_ahead_of_the_others_realigns_them_and_trains_to_the_last_step() {
    use super::super::{Ready, StepSync, Synced};
    use super::PsSync;
    use crate::checkpoint::CheckpointManager;
    use crate::distribute::{LocalStep, StepLoss};

    let ps = InMemoryPs::start(
        2,
        || VariableOptimizer::new(&OptimizerSpec::sgd(0.1)),
        "chief:0",
    );
    let client = parted(ps.client(0, config()), 3);
    let replica = PsReplica::new(Box::new(client), 0, vec!["chief:0".to_string()]);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = PsSync::new(
        replica,
        PsMode::default(),
        CheckpointManager::new(dir.path(), None),
    );
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, state(0), &|_| 5).unwrap();
    let steps = |ps: &InMemoryPs| -> Vec<u64> {
        let snapshots = ps.client(0, config()).snapshot().unwrap();
        snapshots.iter().map(|s| s.step).collect()
    };
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
