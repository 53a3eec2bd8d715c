//! Ps tasks and training-task clients over loopback gRPC, in one process.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::Duration;

use super::load_test_support::{assert_exact_totals, init_requests, run_load_test, LoadTestEnd};
use super::messages::PushOutcome;
use super::*;
use crate::error::Error;
use crate::optimizer::OptimizerSpec;

const WORKERS: usize = 8;
const PUSHES: u64 = 1000;

fn server_config(chief_timeout: Duration) -> PsServerConfig {
    PsServerConfig {
        chief_name: "chief:0".into(),
        chief_timeout,
        startup_timeout: Duration::from_secs(20),
        grace: Duration::from_secs(5),
        token: None,
        tls: None,
    }
}

fn client_config() -> PsClientConfig {
    PsClientConfig::for_tests()
}

/// `n` ps tasks updating with SGD(1.0), each in a thread; their addresses.
fn start(
    n: usize,
    chief_timeout: Duration,
) -> (Vec<String>, Vec<JoinHandle<crate::error::Result<()>>>) {
    (0..n)
        .map(|_| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let optimizer = VariableOptimizer::new(&OptimizerSpec::sgd(1.0));
            let config = server_config(chief_timeout);
            (
                address,
                std::thread::spawn(move || serve(listener, optimizer, config)),
            )
        })
        .unzip()
}

/// 8 workers × 1000 pushes against 2 ps tasks; the step and the values after it.
fn load_test(replicas_to_aggregate: usize) -> LoadTestEnd {
    let (addresses, servers) = start(2, Duration::from_secs(30));
    let clients: Vec<ParameterServers> = (0..WORKERS)
        .map(|w| ParameterServers::connect(&addresses, w, "chief:0", client_config()).unwrap())
        .collect();
    let end = run_load_test(&clients, replicas_to_aggregate, PUSHES);
    clients[0].control(Command::Shutdown).unwrap();
    for client in &clients[1..] {
        client.control(Command::Leave).unwrap();
    }
    for server in servers {
        let exit = server.join().unwrap();
        assert!(exit.is_ok(), "a ps exits cleanly when shut down: {exit:?}");
    }
    end
}

#[test]
fn synchronous_updates_lose_and_double_nothing() {
    assert_exact_totals(load_test(WORKERS), WORKERS, PUSHES, true);
}

#[test]
fn asynchronous_updates_lose_and_double_nothing() {
    assert_exact_totals(load_test(0), WORKERS, PUSHES, false);
}

#[test]
fn backup_workers_and_stale_pushes_are_dropped_and_counted() {
    let (addresses, servers) = start(1, Duration::from_secs(30));
    let clients: Vec<ParameterServers> = (0..3)
        .map(|w| ParameterServers::connect(&addresses, w, "chief:0", client_config()).unwrap())
        .collect();
    let mut init = init_requests(1, WORKERS, 2);
    init[0].workers = 3;
    clients[0].init(init).unwrap();
    let push = |w: usize, step: u64| Push {
        worker: w as u32,
        step,
        generation: 7,
        gradients: vec![("a".into(), vec![1.0; 4])],
        assign: Vec::new(),
        wait: Duration::from_secs(20),
        pull: false,
        since: None,
    };
    // Workers 0 and 1 make step 0's update; worker 2, a backup, comes too late.
    std::thread::scope(|scope| {
        let first = scope.spawn(|| clients[0].push(vec![push(0, 0)]).unwrap());
        let second = scope.spawn(|| clients[1].push(vec![push(1, 0)]).unwrap());
        for reply in [first.join().unwrap(), second.join().unwrap()] {
            assert_eq!(reply[0].outcome, PushOutcome::Applied);
            assert_eq!(reply[0].step, 1);
        }
    });
    let late = clients[2].push(vec![push(2, 0)]).unwrap();
    assert_eq!(late[0].outcome, PushOutcome::Stale);
    let gone = clients[2].push(vec![Push {
        generation: 6,
        ..push(2, 1)
    }]);
    assert_eq!(gone.unwrap()[0].outcome, PushOutcome::Reinitialised);
    let counters = clients[0].control(Command::Finish).unwrap();
    assert_eq!(counters[0].pushes_applied, 2);
    assert_eq!(counters[0].pushes_dropped, 1);
    let done = clients[1].push(vec![push(1, 1)]).unwrap();
    assert_eq!(done[0].outcome, PushOutcome::Done);
    clients[0].control(Command::Shutdown).unwrap();
    clients[1].control(Command::Leave).unwrap();
    clients[2].control(Command::Leave).unwrap();
    servers.into_iter().next().unwrap().join().unwrap().unwrap();
}

#[test]
fn an_asynchronous_staleness_bound_drops_old_gradients() {
    let (addresses, servers) = start(1, Duration::from_secs(30));
    let client = ParameterServers::connect(&addresses, 0, "chief:0", client_config()).unwrap();
    let mut init = init_requests(1, WORKERS, 0);
    init[0].max_staleness = Some(1);
    init[0].workers = 1;
    client.init(init).unwrap();
    let push = |step: u64| Push {
        worker: 0,
        step,
        generation: 7,
        gradients: vec![("a".into(), vec![1.0; 4])],
        assign: Vec::new(),
        wait: Duration::from_secs(1),
        pull: true,
        since: None,
    };
    let outcomes: Vec<PushOutcome> = [0, 0, 0, 3]
        .into_iter()
        .map(|step| client.push(vec![push(step)]).unwrap()[0].outcome)
        .collect();
    // Pulled at 0: applied at 0 (staleness 0) and 1 (staleness 1); at 2 it is 2 steps old.
    let (applied, stale) = (PushOutcome::Applied, PushOutcome::Stale);
    assert_eq!(outcomes, vec![applied, applied, stale, applied]);
    let counters = client.control(Command::Finish).unwrap();
    assert_eq!(
        (counters[0].pushes_dropped, counters[0].staleness_sum),
        (1, 1)
    );
    client.control(Command::Shutdown).unwrap();
    servers.into_iter().next().unwrap().join().unwrap().unwrap();
}

#[test]
fn a_silent_chief_fails_the_ps_and_the_workers_hear_who() {
    let (addresses, servers) = start(1, Duration::from_millis(600));
    let chief = ParameterServers::connect(&addresses, 0, "chief:0", client_config()).unwrap();
    let worker = ParameterServers::connect(&addresses, 1, "chief:0", client_config()).unwrap();
    let mut init = init_requests(1, WORKERS, 0);
    init[0].workers = 2;
    chief.init(init).unwrap();
    drop(chief);
    // Held for an initialisation that never comes, the pull is answered by the failure.
    let pull = Pull {
        wait: Duration::from_secs(10),
        min_generation: Some(u64::MAX),
        since: None,
    };
    let error = worker.pull(vec![pull]).unwrap_err();
    assert!(
        matches!(&error, Error::PeerLost { task, .. } if task == "chief:0"),
        "{error}"
    );
    assert_eq!(error.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
    let failure = servers
        .into_iter()
        .next()
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    assert!(
        failure.to_string().contains("no call from it"),
        "{failure:?}"
    );
    assert_eq!(failure.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
}

#[test]
fn an_unreachable_ps_is_named_after_the_retries() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    drop(listener);
    let config = PsClientConfig {
        peer_timeout: Duration::from_millis(400),
        ..client_config()
    };
    let client = ParameterServers::connect(&[address], 1, "chief:0", config).unwrap();
    let started = std::time::Instant::now();
    let pull = Pull {
        wait: Duration::from_millis(100),
        min_generation: None,
        since: None,
    };
    let error = client.pull(vec![pull]).unwrap_err();
    assert!(
        matches!(&error, Error::Ps(PsFault::Unreachable { ps: 0, .. })),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("lost ps:0: cannot reach it: "),
        "{error}"
    );
    assert_eq!(error.exit_code(), crate::error::RETRYABLE_EXIT_CODE);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "it retried"
    );
}

#[test]
fn assigned_values_replace_the_variables_as_they_are() {
    let (addresses, servers) = start(1, Duration::from_secs(30));
    let client = ParameterServers::connect(&addresses, 0, "chief:0", client_config()).unwrap();
    let mut init = init_requests(1, WORKERS, 0);
    init[0].workers = 1;
    client.init(init).unwrap();
    let reply = client
        .push(vec![Push {
            worker: 0,
            step: 0,
            generation: 7,
            gradients: vec![("a".into(), vec![1.0; 4])],
            assign: vec![("b".into(), vec![0.5, 1.5, 2.5, 3.5, 4.5, 5.5])],
            wait: Duration::from_secs(1),
            pull: true,
            since: None,
        }])
        .unwrap();
    let pulled: BTreeMap<String, Vec<f32>> = reply[0].variables.iter().cloned().collect();
    // `a` took an SGD step; `b` (running statistics, say) was set.
    assert_eq!(pulled["a"], vec![-1.0; 4]);
    assert_eq!(pulled["b"], vec![0.5, 1.5, 2.5, 3.5, 4.5, 5.5]);
    client.control(Command::Shutdown).unwrap();
    servers.into_iter().next().unwrap().join().unwrap().unwrap();
}

#[test]
fn a_ps_that_accepts_but_never_answers_is_reported_lost_within_the_timeout() {
    // A stopped (SIGSTOP) ps: the kernel still accepts connections, nothing answers.
    let frozen = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = frozen.local_addr().unwrap().to_string();
    let frozen_address = address.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = std::sync::Arc::clone(&done);
    // Accepts and keeps every connection, answering nothing, until told to stop (by a
    // last connection once `done` is set).
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in frozen.incoming() {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            held.extend(stream.ok());
        }
    });
    let config = PsClientConfig {
        peer_timeout: Duration::from_secs(1),
        ..client_config()
    };
    let client = ParameterServers::connect(&[address], 1, "chief:0", config).unwrap();
    let started = std::time::Instant::now();
    let error = client
        .pull(vec![Pull::default()])
        .expect_err("a frozen ps answered");
    let waited = started.elapsed();
    assert!(
        matches!(error, Error::Ps(PsFault::Unresponsive { ps: 0, .. })),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("lost ps:0: it did not answer within"),
        "{message}"
    );
    assert!(waited < Duration::from_secs(3), "noticed after {waited:?}");
    // A task that named the ps leaves without waiting for it again: its exit would trail
    // that of a task that does not leave (the chief) by a whole margin.
    let leaving = std::time::Instant::now();
    client.leave().expect("leaving skips a silent ps");
    let left_after = leaving.elapsed();
    assert!(
        left_after < Duration::from_millis(200),
        "left after {left_after:?}"
    );
    drop(client);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = std::net::TcpStream::connect(&frozen_address);
    holder.join().unwrap();
}

#[test]
fn a_pull_asking_for_a_newer_initialisation_is_held_until_the_chief_brings_it() {
    let (addresses, servers) = start(1, Duration::from_secs(30));
    let chief = ParameterServers::connect(&addresses, 0, "chief:0", client_config()).unwrap();
    let worker = ParameterServers::connect(&addresses, 1, "chief:0", client_config()).unwrap();
    let mut init = init_requests(1, 2, 0);
    chief.init(init.clone()).unwrap();
    let asks = |min_generation| Pull {
        wait: Duration::from_secs(20),
        min_generation,
        since: None,
    };
    // Without a generation (as an older training task asks), the ps answers at once.
    let now = worker.pull(vec![asks(None)]).unwrap();
    assert!(matches!(now[0], Pulled::Values { generation: 7, .. }));
    init[0].generation = 8;
    init[0].global_step = 5;
    std::thread::scope(|scope| {
        let held = scope.spawn(|| worker.pull(vec![asks(Some(8))]).unwrap());
        chief.init(init).unwrap();
        let pulled = held.join().unwrap();
        assert!(
            matches!(
                pulled[0],
                Pulled::Values {
                    step: 5,
                    generation: 8,
                    ..
                }
            ),
            "{pulled:?}"
        );
    });
    chief.control(Command::Finish).unwrap();
    chief.control(Command::Shutdown).unwrap();
    worker.control(Command::Leave).unwrap();
    servers.into_iter().next().unwrap().join().unwrap().unwrap();
}
