//! The shard's rules, driven call by call with a clock the tests advance: no threads, no
//! sockets, no sleeps.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::super::load_test_support::{init_requests, GENERATION};
use super::super::messages::{
    Command, Held, Init, Pull, Pulled, Push, PushOutcome, Pushed, Values,
};
use super::super::variable_optimizer::VariableOptimizer;
use super::machine::PendingPull;
use super::push::PendingPush;
use super::*;
use crate::error::Error;
use crate::optimizer::OptimizerSpec;

mod asynchronous;
mod lifecycle;
mod properties;
mod synchronous;

/// A shard updating with SGD(1.0), started at `t0`.
fn shard(t0: Instant) -> ShardMachine {
    ShardMachine::new(
        VariableOptimizer::new(&OptimizerSpec::sgd(1.0)),
        "chief:0".into(),
        t0,
    )
}

/// The load tests' variables `a` (4 values) and `b` (2×3), zero, all on this shard, for
/// `workers` training tasks aggregating `replicas_to_aggregate` gradients per update (0:
/// asynchronous).
fn init(workers: usize, replicas_to_aggregate: usize) -> Init {
    init_requests(1, workers, replicas_to_aggregate).remove(0)
}

/// `worker`'s gradient of all `gradient` for `a`, computed at `step`; it waits up to 10s.
fn push(worker: u32, step: u64, gradient: f32) -> Push {
    Push {
        worker,
        step,
        generation: GENERATION,
        gradients: vec![("a".into(), vec![gradient; 4])],
        assign: Vec::new(),
        wait: Duration::from_secs(10),
        pull: false,
        since: None,
    }
}

/// The answer of a call that must not wait: its value, or why the shard refused it.
fn answered<T, W: std::fmt::Debug>(progress: Progress<T, W>) -> Result<T, ShardFault> {
    match progress {
        Progress::Answered(Ok(answer)) => Ok(answer),
        Progress::Answered(Err(Error::Shard(fault))) => Err(fault),
        Progress::Answered(Err(error)) => panic!("not the shard's refusal: {error}"),
        Progress::Waiting(waiting) => panic!("the call waits ({waiting:?})"),
    }
}

/// What a call that must wait left to poll.
fn waiting<T, W>(progress: Progress<T, W>) -> W {
    match progress {
        Progress::Answered(Ok(_)) => panic!("the call was answered"),
        Progress::Answered(Err(error)) => panic!("the call was refused: {error}"),
        Progress::Waiting(waiting) => waiting,
    }
}

/// The outcome and step of a push that must not wait.
fn outcome(progress: Progress<Pushed, PendingPush>) -> (PushOutcome, u64) {
    let pushed = answered(progress).unwrap();
    (pushed.outcome, pushed.step)
}

/// The variables, by path, at `now`.
fn values(shard: &mut ShardMachine, now: Instant) -> BTreeMap<String, Vec<f32>> {
    shard
        .snapshot(now)
        .unwrap()
        .variables
        .into_iter()
        .map(|(path, (_, values))| (path, values))
        .collect()
}

fn seconds(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// A pull that waits up to `wait` for the chief's initialisation.
fn waits(wait: Duration) -> Pull {
    Pull {
        wait,
        min_generation: None,
        since: None,
    }
}
