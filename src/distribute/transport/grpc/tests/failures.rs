//! Ranks that crash, never come up, disagree on the world size, or all leave at once.

use std::thread;
use std::time::{Duration, Instant};

use super::{config, connect, expected_lanes, input, listeners, on_threads};
use crate::distribute::{all_reduce_sum, GrpcConfig, GrpcTransport, Transport};

#[test]
fn a_crashed_peer_is_reported_at_once_after_what_it_sent() {
    crash_is_reported_at_once_after_what_was_sent(config());
}

/// Rank 1 sends two messages and crashes: rank 0 gets them, then learns at once that rank
/// 1 is gone, waiting, sending and shutting down (over the lane too when `config` has it).
pub(super) fn crash_is_reported_at_once_after_what_was_sent(config: GrpcConfig) {
    let mut ranks = connect(2, config.clone());
    let crashing = ranks.pop().unwrap();
    let survivor = ranks.pop().unwrap();
    assert_eq!(crashing.same_host_peers(), expected_lanes(&config, 1));
    let crasher = thread::spawn(move || {
        let mut t = crashing;
        // Over 64 KiB: on a lane, in the memory shared with rank 0.
        t.send(0, 5, vec![5; 200 << 10]).unwrap();
        t.send(0, 6, vec![6]).unwrap();
        // Crash only once rank 0 has the messages.
        t.recv(0, 100).unwrap();
        t.crash();
    });
    let mut t = survivor;
    assert_eq!(t.recv(1, 6).unwrap(), vec![6]);
    t.send(1, 100, vec![]).unwrap();
    let start = Instant::now();
    let err = t.recv(1, 7).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err.rank(), Some(1));
    assert!(err.to_string().contains("connection lost"), "{err}");
    // What arrived before the crash is still there, once.
    assert!(t.recv(1, 5).unwrap() == vec![5; 200 << 10]);
    assert!(t.recv(1, 5).is_err());
    crasher.join().unwrap();
    // Sending to the crashed rank fails soon too (once HTTP/2 has seen the connection go).
    let start = Instant::now();
    let err = loop {
        match t.send(1, 8, vec![0; 1024]) {
            Err(err) => break err,
            Ok(()) if start.elapsed() < Duration::from_secs(5) => {
                thread::sleep(Duration::from_millis(10))
            }
            Ok(()) => panic!("sending to a crashed rank still succeeds"),
        }
    };
    assert_eq!(err.rank(), Some(1));
    assert!(err.to_string().contains("connection lost"), "{err}");
    let start = Instant::now();
    let err = t.shutdown().unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(err.rank(), Some(1), "{err}");
}

#[test]
fn a_peer_that_never_comes_up_is_named_with_its_address() {
    let (mut listeners, addresses) = listeners(2);
    drop(listeners.pop());
    let config = GrpcConfig {
        connect_timeout: Duration::from_millis(700),
        ..config()
    };
    let start = Instant::now();
    let err = GrpcTransport::connect_with_listener(0, &addresses, listeners.remove(0), config)
        .unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert_eq!(err.rank(), Some(1));
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "rank 1: could not be reached at {} within 700ms",
            addresses[1]
        )),
        "{message}"
    );
}

#[test]
fn ranks_started_with_different_world_sizes_refuse_each_other() {
    let (mut listeners, addresses) = listeners(3);
    drop(listeners.pop());
    let start = Instant::now();
    let out = thread::scope(|scope| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(rank, listener)| {
                // Rank 0 believes in 2 ranks, rank 1 in 3.
                let addresses = &addresses[..2 + rank];
                scope.spawn(move || {
                    GrpcTransport::connect_with_listener(rank, addresses, listener, config())
                        .unwrap_err()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(start.elapsed() < Duration::from_secs(10));
    for (rank, err) in out.iter().enumerate() {
        assert_eq!(err.rank(), Some(1 - rank), "{err}");
        let message = err.to_string();
        assert!(
            message.contains("was started with a world size of"),
            "{message}"
        );
    }
}

#[test]
fn dropping_every_rank_at_once_does_not_hang() {
    let start = Instant::now();
    on_threads(connect(3, config()), |mut t| {
        let mut values = input(t.rank(), 100);
        all_reduce_sum(&mut t, &mut values).unwrap();
        drop(t);
    });
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_rank_that_fails_on_its_own_is_named_by_every_peer() {
    // Rank 0 fails for a reason of its own; rank 1 waits for it, rank 2 for rank 1, which
    // leaves once it has lost rank 0: both name rank 0, rank 1 in rank 0's own word.
    let errors = on_threads(connect(3, config()), |mut t| {
        let rank = t.rank();
        let err = match rank {
            0 => {
                t.recv(1, 1).unwrap();
                t.abandon();
                return None;
            }
            1 => {
                t.send(0, 1, vec![]).unwrap();
                t.recv(0, 2).unwrap_err()
            }
            _ => t.recv(1, 3).unwrap_err(),
        };
        t.abandon();
        Some(err)
    });
    for (rank, err) in errors.iter().enumerate().skip(1) {
        let err = err.as_ref().unwrap();
        assert_eq!(err.rank(), Some(0), "rank {rank}: {err}");
    }
    let err = errors[1].as_ref().unwrap().to_string();
    assert!(
        err.contains("failed and left the cluster; rank 1 gives up"),
        "{err}"
    );
}
