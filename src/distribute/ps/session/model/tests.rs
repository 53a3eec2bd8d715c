//! The session on a model against in-memory ps tasks: what the chief puts on them (and
//! with which placement), what a push does to the state, and what comes back from them —
//! through a state of the tests' own, so that only the [`ModelState`] contract is relied on.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::super::super::client::{InMemoryPs, Intercepted, PsClient, PsClientConfig};
use super::super::super::variable_optimizer::VariableOptimizer;
use super::super::super::{PsMode, PsReplica};
use super::*;
use crate::device::CpuTrainBackend as B;
use crate::optimizer::OptimizerSpec;

fn config() -> PsClientConfig {
    PsClientConfig::for_tests()
}

fn start(num_ps: usize) -> InMemoryPs {
    InMemoryPs::start(num_ps, || VariableOptimizer::new(&sgd()), "chief:0")
}

fn sgd() -> OptimizerSpec {
    OptimizerSpec::sgd(0.1)
}

/// The chief's session through `client`, training to `last_step`.
fn chief(client: impl PsClient + 'static, last_step: u64) -> PsSession {
    let replica = PsReplica::new(Box::new(client), 0, vec!["chief:0".to_string()]);
    let mut session = PsSession::new(replica, PsMode::default());
    session.set_last_step(last_step);
    session
}

type Device = burn::tensor::Device<B>;

/// A directory without checkpoints, and its manager.
fn no_checkpoints() -> (tempfile::TempDir, CheckpointManager) {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), None);
    (dir, manager)
}

/// A training state of the tests' own: a linear model, its optimizer, the global step.
struct Trainee {
    model: Linear<B>,
    optimizer: Optimizer<B>,
    step: u64,
}

impl Trainee {
    fn new(step: u64) -> Self {
        Self {
            model: LinearConfig::new(3, 1).init(&Default::default()),
            optimizer: Optimizer::new(&sgd()),
            step,
        }
    }

    fn values(&self) -> BTreeMap<String, Vec<f32>> {
        let values = parameter_values(&self.model).into_iter();
        values.map(|(path, (_, v))| (path, v)).collect()
    }

    fn gradients(&self) -> GradientsParams {
        let x = Tensor::<B, 2>::ones([2, 3], &Default::default());
        GradientsParams::from_grads(self.model.forward(x).sum().backward(), &self.model)
    }
}

impl ModelState<B> for Trainee {
    type Model = Linear<B>;

    fn parts(&self) -> (&Linear<B>, &Optimizer<B>, u64) {
        (&self.model, &self.optimizer, self.step)
    }

    fn at_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    fn restore(mut self, checkpoint: &Checkpoint, source: &Path) -> Result<Self> {
        self.model = contents::restore_model(self.model, checkpoint, source)?;
        let device = Default::default();
        contents::restore_optimizer(&mut self.optimizer, checkpoint, source, &device)?;
        self.step = checkpoint.global_step;
        Ok(self)
    }

    fn rebuilt<T>(
        mut self,
        rebuild: impl FnOnce(Linear<B>, &mut Optimizer<B>, &Device) -> Result<(Linear<B>, T)>,
    ) -> Result<(Self, T)> {
        let (model, rest) = rebuild(self.model, &mut self.optimizer, &Default::default())?;
        self.model = model;
        Ok((self, rest))
    }
}

/// The ps tasks' steps and which ps holds which variable.
fn on_the_ps(ps: &InMemoryPs) -> (Vec<u64>, BTreeMap<String, usize>) {
    let snapshots = ps.client(0, config()).snapshot().unwrap();
    let mut holders = BTreeMap::new();
    for (i, snapshot) in snapshots.iter().enumerate() {
        holders.extend(snapshot.variables.keys().map(|path| (path.clone(), i)));
    }
    (snapshots.iter().map(|s| s.step).collect(), holders)
}

/// One training step through the ps tasks: pull, gradients, push.
fn train_one_step(
    session: &mut PsSession,
    state: Trainee,
    checkpoints: &CheckpointManager,
) -> (Trainee, PushAnswer) {
    let (state, _) = session.pull_model(state, checkpoints).unwrap();
    let grads = state.gradients();
    session.push_model(state, grads, checkpoints).unwrap()
}

/// The placement with every variable moved to the other of two ps tasks.
fn swapped(placement: &Placement) -> Placement {
    let variables = placement.variables.iter();
    Placement {
        num_ps: 2,
        variables: variables.map(|(path, ps)| (path.clone(), 1 - ps)).collect(),
    }
}

#[test]
fn the_chief_keeps_the_placement_its_checkpoint_recorded_and_otherwise_the_one_in_use() {
    let ps = start(2);
    let mut session = chief(ps.client(0, config()), 100);
    let state = Trainee::new(4);
    session.initialise_model(&state, None).unwrap();
    let first = session.placement().cloned().unwrap();
    assert_eq!(on_the_ps(&ps), (vec![4, 4], first.variables.clone()));

    let mut checkpoint = contents::snapshot(&state.model, &state.optimizer, 4, None).unwrap();
    swapped(&first).record_in(&mut checkpoint).unwrap();
    session.initialise_model(&state, Some(&checkpoint)).unwrap();
    assert_eq!(
        on_the_ps(&ps).1,
        swapped(&first).variables,
        "the checkpoint's"
    );

    session.initialise_model(&state.at_step(6), None).unwrap();
    assert_eq!(
        on_the_ps(&ps),
        (vec![6, 6], swapped(&first).variables),
        "kept"
    );
}

#[test]
fn a_push_moves_the_state_to_the_step_the_ps_tasks_reached() {
    let ps = start(2);
    let mut session = chief(ps.client(0, config()), 100);
    let state = Trainee::new(0);
    session.initialise_model(&state, None).unwrap();
    let (_dir, checkpoints) = no_checkpoints();
    let (state, step) = session.pull_model(state.at_step(7), &checkpoints).unwrap();
    assert_eq!((step, state.step), (Some(0), 0), "the ps tasks' step");
    let before = state.values();
    let grads = state.gradients();
    let (state, answer) = session.push_model(state, grads, &checkpoints).unwrap();
    assert_eq!((answer, state.step), (PushAnswer::Applied(1), 1));
    let (state, step) = session.pull_model(state, &checkpoints).unwrap();
    assert_eq!((step, state.step), (Some(1), 1));
    assert_ne!(state.values(), before, "the update pulled back");
}

#[test]
fn told_done_by_a_ps_ahead_of_the_others_the_chief_puts_them_all_back_at_the_lowest_step() {
    let ps = start(2);
    let ahead = Mutex::new(Some(3));
    let client = Intercepted::new(ps.client(0, config())).on_init(move |inner, mut inits| {
        if let Some(ahead) = ahead.lock().unwrap().take() {
            inits[1].global_step += ahead;
        }
        inner.init(inits)
    });
    let mut session = chief(client, 3);
    let (_dir, checkpoints) = no_checkpoints();
    let state = Trainee::new(0);
    session.initialise_model(&state, None).unwrap();
    let (state, answer) = train_one_step(&mut session, state, &checkpoints);
    // ps:1 started at 3, the last step: it applies nothing and says done; ps:0 applied
    // the push (0 → 1).
    assert_eq!((answer, state.step), (PushAnswer::Dropped(1), 1));
    assert_eq!(on_the_ps(&ps).0, [1, 1], "realigned");
}

#[test]
fn a_restarted_ps_gets_the_latest_checkpoint_or_without_one_the_chiefs_values() {
    let ps = start(2);
    let mut session = chief(ps.client(0, config()), 100);
    let (_dir, checkpoints) = no_checkpoints();
    let state = Trainee::new(0);
    session.initialise_model(&state, None).unwrap();
    let placement = session.placement().cloned();

    ps.restart(1, VariableOptimizer::new(&sgd()));
    let state = session
        .reinitialise_model(1, state.at_step(2), &checkpoints)
        .unwrap();
    assert_eq!(state.step, 2, "no checkpoint: the chief's own state");
    assert_eq!(on_the_ps(&ps).0, [2, 2]);
    assert_eq!(session.placement().cloned(), placement);

    let (state, checkpoint) = session.gather_checkpoint(state, None).unwrap();
    checkpoints.save(&checkpoint).unwrap();
    let saved = state.values();
    let (state, _) = train_one_step(&mut session, state, &checkpoints);
    assert_eq!(state.step, 3);
    ps.restart(0, VariableOptimizer::new(&sgd()));
    let (state, answer) = train_one_step(&mut session, state, &checkpoints);
    assert_eq!(
        (answer, state.step),
        (PushAnswer::Dropped(2), 2),
        "the checkpoint's"
    );
    assert_eq!(state.values(), saved);
    assert_eq!(on_the_ps(&ps).0, [2, 2]);
}

#[test]
fn a_checkpoint_of_the_ps_tasks_records_their_step_and_placement() {
    let ps = start(2);
    let mut session = chief(ps.client(0, config()), 100);
    let (_dir, checkpoints) = no_checkpoints();
    let state = Trainee::new(5);
    session.initialise_model(&state, None).unwrap();
    let (state, _) = train_one_step(&mut session, state, &checkpoints);
    let (state, checkpoint) = session.gather_checkpoint(state.at_step(0), None).unwrap();
    assert_eq!((state.step, checkpoint.global_step), (6, 6));
    assert_eq!(
        Placement::recorded_in(&checkpoint),
        session.placement().cloned()
    );
    let restored = Trainee::new(0)
        .restore(&checkpoint, Path::new("c"))
        .unwrap();
    assert_eq!(restored.values(), state.values());
}
