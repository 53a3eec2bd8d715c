//! The one loop driven by a scripted [`StepSync`]: what it does with each outcome of a
//! step, independent of any real strategy.

use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use datasets::{from_vec, Position};
use serde::{Deserialize, Serialize};

use super::step_sync::{Ready, Started, StepSync, Synced};
use super::termination::Termination;
use super::train_loop::TrainLoop;
use super::train_state::TrainState;
use crate::checkpoint::{Checkpoint, CheckpointManager};
use crate::device::CpuTrainBackend;
use crate::distribute::LocalStep;
use crate::error::{Error, Result};
use crate::estimator::{Estimator, LossReadback, RunConfig, TrainOutcome, TrainSpec};
use crate::export::Signature;
use crate::hooks::{Control, Emit, Hook, RunEnd, StepInfo};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::summary::SummaryWriter;

type B = CpuTrainBackend;
type State = TrainState<B, Linear<B>>;

/// y = w·x + b on one feature; a batch is a list of (x, y).
#[derive(Serialize, Deserialize)]
struct Line {
    run_config: RunConfig,
}

impl Estimator for Line {
    type Model<Bk: Backend> = Linear<Bk>;
    type Batch = Vec<(f32, f32)>;
    /// x and y, `[batch, 1]` each.
    type DeviceBatch<Bk: Backend> = (Tensor<Bk, 2>, Tensor<Bk, 2>);
    type Prediction = f32;

    fn run_config(&self) -> &RunConfig {
        &self.run_config
    }

    fn build_model<Bk: Backend>(&self, device: &Bk::Device) -> Linear<Bk> {
        LinearConfig::new(1, 1).init(device)
    }

    fn to_device<Bk: Backend>(
        &self,
        batch: &Self::Batch,
        device: &Bk::Device,
    ) -> Result<Self::DeviceBatch<Bk>> {
        let x: Vec<f32> = batch.iter().map(|(x, _)| *x).collect();
        let y: Vec<f32> = batch.iter().map(|(_, y)| *y).collect();
        let x = Tensor::<Bk, 2>::from_data(TensorData::new(x, [batch.len(), 1]), device);
        let y = Tensor::<Bk, 2>::from_data(TensorData::new(y, [batch.len(), 1]), device);
        Ok((x, y))
    }

    fn loss<Bk: Backend>(
        &self,
        model: &Linear<Bk>,
        (x, y): &Self::DeviceBatch<Bk>,
        _device: &Bk::Device,
    ) -> Result<Tensor<Bk, 1>> {
        let error = model.forward(x.clone()) - y.clone();
        Ok((error.clone() * error).mean())
    }

    /// The size of the thread pool it runs on, once per example.
    fn predictions<Bk: Backend>(
        &self,
        _model: &Linear<Bk>,
        (x, _): &Self::DeviceBatch<Bk>,
        _device: &Bk::Device,
    ) -> Result<Vec<f32>> {
        Ok(vec![rayon::current_num_threads() as f32; x.dims()[0]])
    }

    fn serving_signature(&self) -> Signature {
        Signature::new()
    }
}

/// What the scripted strategy was asked to do, in order.
type Calls = Arc<Mutex<Vec<String>>>;

/// A strategy whose exchanges answer from a script: `A` apply, `P` applied elsewhere (the
/// global step jumps by 10), `S` skipped, `X` stop, `E` error, `T` apply and terminate
/// (another replica was asked to).
struct Scripted {
    script: Vec<char>,
    calls: Calls,
    chief: bool,
    start_step: u64,
    terminated: bool,
}

impl Scripted {
    fn record(&self, call: impl Into<String>) {
        self.calls.lock().unwrap().push(call.into());
    }
}

impl<Bk, M> StepSync<Bk, M> for Scripted
where
    Bk: AutodiffBackend,
    M: Module<Bk>,
{
    fn is_chief(&self) -> bool {
        self.chief
    }

    fn rank(&self) -> usize {
        0
    }

    fn prepare(
        &mut self,
        mut state: TrainState<Bk, M>,
        last_step: &dyn Fn(u64) -> u64,
    ) -> Result<Started<Bk, M>> {
        state.global_step = self.start_step;
        self.record(format!("prepare to {}", last_step(self.start_step)));
        Ok((state, None))
    }

    fn ready(
        &mut self,
        state: TrainState<Bk, M>,
        has_batch: bool,
    ) -> Result<(TrainState<Bk, M>, Ready)> {
        if !has_batch {
            self.record("out of input");
            return Ok((state, Ready::Stop));
        }
        let seed_step = state.global_step;
        Ok((state, Ready::Compute { seed_step }))
    }

    fn exchange(
        &mut self,
        mut state: TrainState<Bk, M>,
        local: Option<LocalStep>,
    ) -> Result<(TrainState<Bk, M>, Synced)> {
        let local = local.expect("a batch");
        let next = if self.script.is_empty() {
            'A'
        } else {
            self.script.remove(0)
        };
        self.record(format!("exchange at {}: {next}", state.global_step));
        let synced = match next {
            'A' => Synced::Apply(local),
            'P' => {
                state.global_step += 10;
                Synced::Applied {
                    loss: local.loss.read(),
                }
            }
            'S' => Synced::Skipped,
            'X' => Synced::Stop,
            'T' => {
                self.terminated = true;
                Synced::Apply(local)
            }
            _ => return Err(Error::Config("scripted failure".into())),
        };
        Ok((state, synced))
    }

    fn termination(&self) -> Option<Termination> {
        self.terminated.then_some(Termination::Peer)
    }

    fn leave(&mut self, state: &TrainState<Bk, M>) -> Result<()> {
        self.record(format!("leave at {}", state.global_step));
        Ok(())
    }

    fn snapshot(
        &mut self,
        state: TrainState<Bk, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<Bk, M>, Checkpoint)> {
        self.record(format!("snapshot at {}", state.global_step));
        let checkpoint = state.snapshot(position)?;
        Ok((state, checkpoint))
    }

    fn before_final_checkpoint(&mut self) -> Result<bool> {
        Ok(false)
    }

    fn finish(&mut self, state: &TrainState<Bk, M>) -> Result<u32> {
        self.record(format!("finish at {}", state.global_step));
        Ok(7)
    }

    fn abandon(&mut self) {
        self.record("abandon");
    }

    fn write_summaries(&mut self, _writer: &mut SummaryWriter, _step: u64) {}
}

/// Stops training after the step `at`; records what it is told.
struct StopAt {
    at: u64,
    calls: Calls,
}

impl Hook for StopAt {
    fn name(&self) -> &str {
        "stop-at"
    }

    fn after_step(&mut self, info: &StepInfo, _emit: &mut Emit) -> Result<Control> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("after step {}", info.global_step));
        Ok(if info.global_step >= self.at {
            Control::Stop
        } else {
            Control::Continue
        })
    }

    fn end(&mut self, end: &RunEnd<'_>) -> Result<()> {
        let line = format!("end at {}: {}", end.global_step, end.error.unwrap_or("ok"));
        self.calls.lock().unwrap().push(line);
        Ok(())
    }
}

struct Run {
    outcome: Result<TrainOutcome>,
    calls: Vec<String>,
    model_dir: tempfile::TempDir,
}

/// Trains `Line` on `batches` batches with the scripted strategy, stopping by hook after
/// `stop_at` (never by default) and at `max_steps`.
fn run(script: &str, chief: bool, start_step: u64, batches: usize, stop_at: u64) -> Run {
    let model_dir = tempfile::tempdir().unwrap();
    let estimator = Line {
        run_config: RunConfig::new(model_dir.path())
            .with_progress(false)
            .with_save_checkpoints_steps(1000),
    };
    let calls = Calls::default();
    let sync = Scripted {
        script: script.chars().collect(),
        calls: calls.clone(),
        chief,
        start_step,
        terminated: false,
    };
    let device = Default::default();
    let state: State = TrainState {
        model: estimator.build_model::<B>(&device),
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.01)),
        sync_replicas: 1,
        global_step: 0,
        device,
        loss_scale: None,
    };
    let data: Vec<Vec<(f32, f32)>> = (0..batches).map(|i| vec![(i as f32, 2.0)]).collect();
    let spec = TrainSpec::max_steps(8).with_hook(StopAt {
        at: stop_at,
        calls: calls.clone(),
    });
    let train_loop = TrainLoop {
        estimator: &estimator,
        sync: Box::new(sync),
        loss_readback: LossReadback::EveryStep,
        listener: None,
        timeline: None,
    };
    let outcome = train_loop.run(state, from_vec(data), spec);
    let calls = calls.lock().unwrap().clone();
    Run {
        outcome,
        calls,
        model_dir,
    }
}

mod predict;
mod termination;

#[test]
fn applied_steps_run_the_hooks_and_the_last_step_is_checkpointed() {
    let run = run("", true, 0, 100, u64::MAX);
    let outcome = run.outcome.unwrap();
    assert_eq!((outcome.global_step, outcome.steps_run), (8, 8));
    assert_eq!(outcome.weights_crc32c, Some(7));
    assert!(outcome.last_loss.is_some());
    let afters = run
        .calls
        .iter()
        .filter(|c| c.starts_with("after step"))
        .count();
    assert_eq!(afters, 8);
    assert_eq!(run.calls.first().unwrap(), "prepare to 8");
    assert!(
        run.calls.contains(&"snapshot at 8".to_string()),
        "{:?}",
        run.calls
    );
    assert_eq!(run.calls.last().unwrap(), "end at 8: ok");
    let manager = CheckpointManager::new(run.model_dir.path(), None);
    assert_eq!(manager.latest_step().unwrap(), Some(8));
}

#[test]
fn skipped_steps_reach_no_hook_and_remote_updates_move_the_step() {
    let run = run("ASPX", true, 0, 100, u64::MAX);
    let outcome = run.outcome.unwrap();
    // A: 0 -> 1; S: nothing; P: 1 -> 11 (past max_steps 8, which the ps enforces); X.
    assert_eq!(outcome.global_step, 11);
    // Two updates of this task's were applied; the global step moved by 11.
    assert_eq!((outcome.steps_run, outcome.global_steps_run), (2, 11));
    let afters: Vec<&String> = run
        .calls
        .iter()
        .filter(|c| c.starts_with("after step"))
        .collect();
    assert_eq!(afters, ["after step 1", "after step 11"]);
}

#[test]
fn a_stop_from_the_strategy_ends_every_replica_without_leaving() {
    let run = run("AAX", false, 0, 100, u64::MAX);
    let outcome = run.outcome.unwrap();
    assert_eq!(outcome.global_step, 2);
    assert!(!run.calls.iter().any(|c| c.starts_with("leave")));
    // Not the chief: no checkpoint, no snapshot.
    assert!(outcome.checkpoint.is_none());
    assert!(!run.calls.iter().any(|c| c.starts_with("snapshot")));
    assert!(run.calls.contains(&"finish at 2".to_string()));
}

#[test]
fn a_hook_stopping_before_the_last_step_leaves_the_peers_once() {
    let run = run("", true, 0, 100, 3);
    assert_eq!(run.outcome.unwrap().global_step, 3);
    let leaves: Vec<&String> = run
        .calls
        .iter()
        .filter(|c| c.starts_with("leave"))
        .collect();
    assert_eq!(leaves, ["leave at 3"]);
}

#[test]
fn the_end_of_the_input_asks_the_strategy() {
    let run = run("", true, 0, 2, u64::MAX);
    assert_eq!(run.outcome.unwrap().global_step, 2);
    assert!(run.calls.contains(&"out of input".to_string()));
}

#[test]
fn a_failed_step_abandons_the_peers_and_ends_the_hooks_with_the_error() {
    let run = run("AE", true, 0, 100, u64::MAX);
    let error = run.outcome.unwrap_err();
    assert!(error.to_string().contains("scripted failure"), "{error}");
    assert!(run.calls.contains(&"abandon".to_string()));
    assert!(!run.calls.iter().any(|c| c.starts_with("finish")));
    assert_eq!(
        run.calls.last().unwrap(),
        "end at 1: invalid configuration: scripted failure"
    );
}

#[test]
fn a_state_already_at_the_limit_trains_nothing_but_ends_the_job() {
    let run = run("", true, 8, 100, u64::MAX);
    let outcome = run.outcome.unwrap();
    assert_eq!((outcome.global_step, outcome.steps_run), (8, 0));
    assert!(!run.calls.iter().any(|c| c.starts_with("exchange")));
    assert!(run.calls.contains(&"finish at 8".to_string()));
}
