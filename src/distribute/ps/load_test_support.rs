//! What the ps load tests share, whatever the client: two variables to initialise and a
//! worker that pulls and pushes.

use std::collections::BTreeMap;
use std::time::Duration;

use super::client::PsClient;
use super::placement::Placement;
use super::proto::{ControlReply, InitRequest, PushOutcome, PushRequest};
use super::variable_optimizer::VariableOptimizer;
use super::wire::{f32_values, variable};
use crate::optimizer::OptimizerSpec;

/// Variables `a` (4 values) and `b` (2×3), zero, placed greedily over `num_ps` (`b` on ps 0,
/// `a` on ps 1 with two), for `workers` training tasks.
pub(super) fn init_requests(
    num_ps: usize,
    workers: usize,
    replicas_to_aggregate: usize,
) -> Vec<InitRequest> {
    let sizes = [("a".to_string(), 4), ("b".to_string(), 6)];
    let placement = Placement::greedy(&sizes, num_ps);
    let empty_state = VariableOptimizer::new(&OptimizerSpec::sgd(1.0))
        .state_bytes()
        .unwrap();
    let mut requests: Vec<InitRequest> = (0..num_ps)
        .map(|_| InitRequest {
            variables: Vec::new(),
            optimizer_state: empty_state.clone(),
            optimizer: "sgd".into(),
            learning_rate: 1.0,
            global_step: 0,
            last_step: u64::MAX,
            workers: workers as u32,
            replicas_to_aggregate: replicas_to_aggregate as u32,
            max_staleness: None,
            generation: 7,
            learning_rate_schedule: String::new(),
        })
        .collect();
    requests[placement.ps_of("a").unwrap()]
        .variables
        .push(variable("a", &[4], &[0.0; 4]));
    requests[placement.ps_of("b").unwrap()]
        .variables
        .push(variable("b", &[2, 3], &[0.0; 6]));
    requests
}

/// Worker `w` pulls then pushes a gradient of all `w + 1` to every variable, `pushes` times;
/// how many pushes were applied.
pub(super) fn work(client: &dyn PsClient, w: usize, pushes: u64) -> u64 {
    let mut applied = 0;
    for _ in 0..pushes {
        let pulled = client.pull(Duration::from_secs(20)).unwrap();
        let requests = pulled
            .iter()
            .map(|reply| PushRequest {
                worker: w as u32,
                step: reply.step,
                generation: reply.generation,
                gradients: reply
                    .variables
                    .iter()
                    .map(|v| {
                        let n = f32_values(v).unwrap().len();
                        variable(&v.path, &[], &vec![(w + 1) as f32; n])
                    })
                    .collect(),
                wait_ms: 20_000,
                pull: false,
                assign: Vec::new(),
            })
            .collect();
        let replies = client.push(requests).unwrap();
        if replies
            .iter()
            .all(|r| r.outcome == PushOutcome::Applied as i32)
        {
            applied += 1;
        }
    }
    applied
}

/// What a load test ends with: each ps's global step, every variable's values, each ps's
/// counters.
pub(super) type LoadTestEnd = (Vec<u64>, BTreeMap<String, Vec<f32>>, Vec<ControlReply>);

/// Checks a load test of `workers` workers pushing `pushes` times each against 2 ps tasks,
/// synchronous (every update averages one gradient of each worker) or not (every push is
/// its own update): nothing lost, nothing applied twice.
pub(super) fn assert_exact_totals(end: LoadTestEnd, workers: usize, pushes: u64, sync: bool) {
    let (steps, values, counters) = end;
    // Worker w pushes w + 1: their sum is n(n + 1)/2, their mean (n + 1)/2.
    let sum = (workers * (workers + 1) / 2) as f32;
    let (expected_steps, per_push) = match sync {
        true => (pushes, sum / workers as f32),
        false => (workers as u64 * pushes, sum),
    };
    assert_eq!(steps, vec![expected_steps; 2]);
    for (path, v) in &values {
        assert!(
            v.iter().all(|&x| x == -per_push * pushes as f32),
            "{path}: {v:?}"
        );
    }
    for c in &counters {
        assert_eq!(c.pushes_applied, workers as u64 * pushes);
        assert_eq!(c.pushes_dropped, 0);
    }
}
