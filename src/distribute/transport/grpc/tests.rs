//! Clusters of real gRPC transports on loopback, one thread per rank.

mod admission;
mod exchange;
mod failures;
mod lane;
mod tls;
mod token;

use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use crate::distribute::collective_fault::Result;
use crate::distribute::{all_reduce_sum, GrpcConfig, GrpcTransport, Transport};

/// Generous bounds: every wait in these tests ends well before them unless something is
/// wrong. Everything over HTTP/2: without it these loopback clusters would use the
/// same-host lane, which `lane.rs` tests with [`lane_config`].
fn config() -> GrpcConfig {
    GrpcConfig {
        peer_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(20),
        same_host_lane: false,
        ..GrpcConfig::default()
    }
}

/// [`config`] with the same-host lane on, as a cluster on loopback has it by default.
fn lane_config() -> GrpcConfig {
    GrpcConfig {
        same_host_lane: true,
        ..config()
    }
}

/// The peers of `rank` (of 2) that `config` sends to over the same-host lane.
fn expected_lanes(config: &GrpcConfig, rank: usize) -> Vec<usize> {
    if config.same_host_lane {
        vec![1 - rank]
    } else {
        Vec::new()
    }
}

/// `n` listeners on free loopback ports, and the addresses that reach them.
fn listeners(n: usize) -> (Vec<TcpListener>, Vec<String>) {
    let listeners: Vec<_> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let addresses = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    (listeners, addresses)
}

/// Connects rank `r` with `configs[r]` for every rank at once, each in its own thread.
fn try_connect(configs: Vec<GrpcConfig>) -> Vec<Result<GrpcTransport>> {
    let (listeners, addresses) = listeners(configs.len());
    try_connect_on(listeners, &addresses, configs)
}

/// [`try_connect`] serving rank `r` on `listeners[r]`, reached at `addresses[r]`.
fn try_connect_on(
    listeners: Vec<TcpListener>,
    addresses: &[String],
    configs: Vec<GrpcConfig>,
) -> Vec<Result<GrpcTransport>> {
    thread::scope(|scope| {
        let handles: Vec<_> = listeners
            .into_iter()
            .zip(configs)
            .enumerate()
            .map(|(rank, (listener, config))| {
                scope.spawn(move || {
                    GrpcTransport::connect_with_listener(rank, addresses, listener, config)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn connect(n: usize, config: GrpcConfig) -> Vec<GrpcTransport> {
    try_connect(vec![config; n])
        .into_iter()
        .map(|t| t.expect("connect"))
        .collect()
}

/// Runs `f` on every rank in its own thread; the results in rank order.
fn on_threads<R: Send>(ranks: Vec<GrpcTransport>, f: impl Fn(GrpcTransport) -> R + Sync) -> Vec<R> {
    thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|t| scope.spawn(move || f(t)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread panicked"))
            .collect()
    })
}

/// Integer-valued inputs: their sums are exact in f32 whatever the order of additions.
fn input(rank: usize, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7 + rank * 13) % 1000) as f32)
        .collect()
}

/// All-reduces [`input`] of each of `lens` on every one of `ranks`, shuts them down and checks
/// that each holds the exact sums.
fn assert_exact_sums(ranks: Vec<GrpcTransport>, lens: &[usize]) {
    let n = ranks.len();
    let out = on_threads(ranks, |mut t| {
        let sums: Vec<Vec<f32>> = lens
            .iter()
            .map(|&len| {
                let mut values = input(t.rank(), len);
                all_reduce_sum(&mut t, &mut values).unwrap();
                values
            })
            .collect();
        t.shutdown().unwrap();
        sums
    });
    for (call, &len) in lens.iter().enumerate() {
        let expected: Vec<f32> = (0..len)
            .map(|i| (0..n).map(|r| ((i * 7 + r * 13) % 1000) as f32).sum())
            .collect();
        for (rank, sums) in out.iter().enumerate() {
            assert!(
                sums[call] == expected,
                "n={n} len={len}: rank {rank} differs from the exact sum"
            );
        }
    }
}
