//! Training tasks in threads against ps tasks of this process, through the in-memory
//! client: the shard driver's locking and waking under load, and the errors a training
//! task sees.

use std::time::{Duration, Instant};

use super::super::load_test_support::{
    assert_exact_totals, init_requests, run_load_test, LoadTestEnd,
};
use super::super::messages::Pulled;
use super::super::shard::{Patience, Verdict};
use super::super::variable_optimizer::VariableOptimizer;
use super::*;
use crate::error::Error;
use crate::optimizer::OptimizerSpec;

const WORKERS: usize = 4;
const PUSHES: u64 = 100;

fn config() -> PsClientConfig {
    PsClientConfig::for_tests()
}

fn start(num_ps: usize) -> InMemoryPs {
    InMemoryPs::start(
        num_ps,
        || VariableOptimizer::new(&OptimizerSpec::sgd(1.0)),
        "chief:0",
    )
}

/// `WORKERS` threads × `PUSHES` pushes against 2 in-memory ps tasks; each ps's step, the
/// values after the run, and the chief's counters.
fn load_test(replicas_to_aggregate: usize) -> LoadTestEnd {
    let started = Instant::now();
    let ps = start(2);
    let clients: Vec<InMemoryParameterServers> =
        (0..WORKERS).map(|w| ps.client(w, config())).collect();
    let end = run_load_test(&clients, replicas_to_aggregate, PUSHES);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    end
}

#[test]
fn synchronous_updates_in_memory_lose_and_double_nothing() {
    assert_exact_totals(load_test(WORKERS), WORKERS, PUSHES, true);
}

#[test]
fn asynchronous_updates_in_memory_lose_and_double_nothing() {
    assert_exact_totals(load_test(0), WORKERS, PUSHES, false);
}

#[test]
fn errors_name_the_ps_the_chief_or_the_variable_at_fault() {
    let ps = start(2);
    let chief = ps.client(0, config());
    let worker = ps.client(1, config());
    assert!(matches!(
        worker.pull(vec![Pull::default(); 2]),
        Err(Error::Ps(PsFault::NotInitialised { ps: 0 }))
    ));
    chief.init(init_requests(2, WORKERS, 0)).unwrap();
    let mut wrong = init_requests(2, WORKERS, 0);
    wrong[1].optimizer = "adam".into();
    let error = chief.init(wrong).unwrap_err();
    assert!(
        matches!(&error, Error::Config(m) if m.starts_with("ps:1: ") && m.contains("'adam'")),
        "{error}"
    );
    let patience = Patience {
        chief_timeout: Duration::ZERO,
        startup_timeout: Duration::ZERO,
        grace: Duration::from_secs(5),
    };
    assert_eq!(ps.shards()[1].supervise(patience), Verdict::Serve);
    let error = worker.pull(vec![Pull::default(); 2]).unwrap_err();
    assert!(
        matches!(&error, Error::PeerLost { task, message }
            if task == "chief:0" && message.ends_with("(ps:1 says)")),
        "{error}"
    );
    assert_eq!(error.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
}

#[test]
fn the_heartbeat_keeps_the_chief_alive_until_the_client_is_dropped() {
    let ps = start(1);
    let mut chief = ps.client(0, config());
    chief.init(init_requests(1, WORKERS, 0)).unwrap();
    chief.start_heartbeat(Duration::from_millis(10));
    let patience = Patience {
        chief_timeout: Duration::from_secs(1),
        startup_timeout: Duration::from_secs(1),
        grace: Duration::ZERO,
    };
    let shard = &ps.shards()[0];
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1200) {
        assert_eq!(shard.supervise(patience), Verdict::Serve);
        shard.wait_for_change(Duration::from_millis(50));
    }
    let dropped = Instant::now();
    drop(chief);
    assert!(
        dropped.elapsed() < Duration::from_millis(500),
        "the heartbeat stops at once"
    );
}

#[test]
fn a_replica_in_memory_calls_the_shards_of_this_process() {
    let ps = start(2);
    let names = vec!["chief:0".to_string(), "worker:0".to_string()];
    let chief = super::super::PsReplica::in_memory(&ps, 0, names.clone(), config());
    let worker = super::super::PsReplica::in_memory(&ps, 1, names, config());
    assert_eq!((chief.num_ps(), chief.world_size()), (2, 2));
    assert!(chief.is_chief() && !worker.is_chief());
    assert_eq!(worker.servers.worker(), 1);
    chief.servers.init(init_requests(2, WORKERS, 0)).unwrap();
    let pulled = worker.servers.pull(vec![Pull::default(); 2]).unwrap();
    assert!(pulled
        .iter()
        .all(|reply| matches!(reply, Pulled::Values { generation: 7, .. })));
}
