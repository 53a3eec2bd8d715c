//! What the ps load tests share, whatever the client: two variables to initialise and a
//! worker that pulls and pushes. The shard's own tests start from the same variables.

use std::collections::BTreeMap;
use std::time::Duration;

use super::client::PsClient;
use super::messages::{Command, Counters, Init, Pull, Pulled, Push, PushOutcome};
use super::placement::Placement;
use super::variable_optimizer::VariableOptimizer;
use crate::optimizer::OptimizerSpec;

/// Generation of the chief's first initialisation in these tests.
pub(super) const GENERATION: u64 = 7;

/// Variables `a` (4 values) and `b` (2×3), zero, placed greedily over `num_ps` (`b` on ps 0,
/// `a` on ps 1 with two), for `workers` training tasks.
pub(super) fn init_requests(
    num_ps: usize,
    workers: usize,
    replicas_to_aggregate: usize,
) -> Vec<Init> {
    let sizes = [("a".to_string(), 4), ("b".to_string(), 6)];
    let placement = Placement::greedy(&sizes, num_ps);
    let empty_state = VariableOptimizer::new(&OptimizerSpec::sgd(1.0))
        .state_bytes()
        .unwrap();
    let mut inits: Vec<Init> = (0..num_ps)
        .map(|_| Init {
            variables: BTreeMap::new(),
            optimizer_state: empty_state.clone(),
            optimizer: "sgd".into(),
            learning_rate: 1.0,
            schedule: Default::default(),
            global_step: 0,
            last_step: u64::MAX,
            workers,
            replicas_to_aggregate,
            max_staleness: None,
            generation: GENERATION,
        })
        .collect();
    inits[placement.ps_of("a").unwrap()]
        .variables
        .insert("a".into(), (vec![4], vec![0.0; 4]));
    inits[placement.ps_of("b").unwrap()]
        .variables
        .insert("b".into(), (vec![2, 3], vec![0.0; 6]));
    inits
}

/// Worker `w` pulls then pushes a gradient of all `w + 1` to every variable, `pushes` times;
/// how many pushes were applied.
pub(super) fn work(client: &dyn PsClient, w: usize, pushes: u64) -> u64 {
    let mut applied = 0;
    for _ in 0..pushes {
        let pull = Pull {
            wait: Duration::from_secs(20),
            min_generation: None,
            since: None,
        };
        let pushes = client
            .pull(vec![pull; client.len()])
            .unwrap()
            .into_iter()
            .map(|reply| {
                let Pulled::Values {
                    step,
                    generation,
                    variables,
                    ..
                } = reply
                else {
                    panic!("the job ended early");
                };
                let gradient =
                    |(path, v): (String, Vec<f32>)| (path, vec![(w + 1) as f32; v.len()]);
                Push {
                    worker: w as u32,
                    step,
                    generation,
                    gradients: variables.into_iter().map(gradient).collect(),
                    assign: Vec::new(),
                    wait: Duration::from_secs(20),
                    pull: false,
                    since: None,
                }
            })
            .collect();
        let replies = client.push(pushes).unwrap();
        if replies.iter().all(|r| r.outcome == PushOutcome::Applied) {
            applied += 1;
        }
    }
    applied
}

/// What a load test ends with: each ps's global step, every variable's values, each ps's
/// counters.
pub(super) type LoadTestEnd = (Vec<u64>, BTreeMap<String, Vec<f32>>, Vec<Counters>);

/// Every one of `clients` a worker of its own: the first initialises 2 ps tasks (aggregating
/// `replicas_to_aggregate` pushes an update), then each pulls and pushes `pushes` times in a
/// thread of its own, and the first finishes the job.
pub(super) fn run_load_test<C: PsClient + Sync>(
    clients: &[C],
    replicas_to_aggregate: usize,
    pushes: u64,
) -> LoadTestEnd {
    let workers = clients.len();
    clients[0]
        .init(init_requests(2, workers, replicas_to_aggregate))
        .unwrap();
    let applied: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(w, client)| scope.spawn(move || work(client, w, pushes)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(applied, workers as u64 * pushes, "every push was applied");
    let snapshots = clients[0].snapshot().unwrap();
    let steps = snapshots.iter().map(|s| s.step).collect();
    let values = snapshots
        .into_iter()
        .flat_map(|s| s.variables)
        .map(|(path, (_, values))| (path, values))
        .collect();
    let counters = clients[0].control(Command::Finish).unwrap();
    (steps, values, counters)
}

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
