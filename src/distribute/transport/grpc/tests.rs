//! Clusters of real gRPC transports on loopback, one thread per rank.

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use tonic::Code;

use super::proto::collective_client::CollectiveClient;
use super::proto::{Envelope, HelloRequest};
use super::*;
use crate::distribute::testing::SplitMix;
use crate::distribute::{all_reduce_sum, Transport};

/// Generous bounds: every wait in these tests ends well before them unless something is wrong.
fn config() -> GrpcConfig {
    GrpcConfig {
        peer_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(20),
        token: None,
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
    thread::scope(|scope| {
        let handles: Vec<_> = listeners
            .into_iter()
            .zip(configs)
            .enumerate()
            .map(|(rank, (listener, config))| {
                let addresses = &addresses;
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

#[test]
fn all_reduce_sums_are_exact_and_identical_on_2_3_and_4_ranks() {
    // The last length is over 4 MiB and divisible by none of 2, 3, 4.
    let lens = [1, 5, 1001, (5 << 20) / 4 + 1];
    for n in 2..=4 {
        let out = on_threads(connect(n, config()), |mut t| {
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
}

#[test]
fn tags_are_matched_in_order_and_peers_kept_apart() {
    let out = on_threads(connect(3, config()), |mut t| {
        let got = match t.rank() {
            0 => vec![
                t.recv(2, 9).unwrap(),
                t.recv(1, 9).unwrap(),
                t.recv(1, 7).unwrap(),
                t.recv(2, 7).unwrap(),
                t.recv(1, 9).unwrap(),
                t.recv(1, 7).unwrap(),
            ],
            r => {
                let r = r as u8;
                for (tag, byte) in [(7, 1), (9, 2), (7, 3), (9, 4)] {
                    t.send(0, tag, vec![r, byte]).unwrap();
                }
                vec![]
            }
        };
        assert!(matches!(
            t.send(t.rank(), 0, vec![]),
            Err(DistributeError::Invalid(_))
        ));
        assert!(matches!(t.recv(3, 0), Err(DistributeError::Invalid(_))));
        t.shutdown().unwrap();
        got
    });
    let expected: Vec<Vec<u8>> = vec![
        vec![2, 2],
        vec![1, 2],
        vec![1, 1],
        vec![2, 1],
        vec![1, 4],
        vec![1, 3],
    ];
    assert_eq!(out[0], expected);
}

#[test]
fn a_five_mib_message_passes_both_ways() {
    // `connect` binds the ports itself here: pick free ones, then let them go.
    let (listeners, addresses) = listeners(2);
    drop(listeners);
    let message = SplitMix(5).bytes(5 << 20);
    let out = thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|rank| {
                let (addresses, message) = (&addresses, &message);
                scope.spawn(move || {
                    let mut t = GrpcTransport::connect(rank, addresses, config()).unwrap();
                    assert_eq!(t.local_addr().to_string(), addresses[rank]);
                    let peer = 1 - rank;
                    t.send(peer, 42, message.clone()).unwrap();
                    let got = t.recv(peer, 42).unwrap();
                    t.shutdown().unwrap();
                    got
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(out[0] == message && out[1] == message);
}

/// Calls `address`'s server with the generated client, claiming rank `rank` of 2 and
/// presenting `token` if any: the codes of `Hello` and of `Deliver`.
fn raw_calls(address: SocketAddr, rank: usize, token: Option<&str>) -> (Code, Code) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = CollectiveClient::connect(format!("http://{address}"))
            .await
            .unwrap();
        let token = token.map(|t| token_value(t).unwrap());
        let hello = HelloRequest {
            rank: rank as u32,
            world_size: 2,
        };
        let hello = client
            .hello(metadata::outgoing(hello, rank, token.as_ref()))
            .await
            .map_or_else(|status| status.code(), |_| Code::Ok);
        let stream = tokio_stream::iter(vec![Envelope {
            tag: 1,
            payload: vec![1].into(),
        }]);
        let deliver = client
            .deliver(metadata::outgoing(stream, rank, token.as_ref()))
            .await
            .map_or_else(|status| status.code(), |_| Code::Ok);
        (hello, deliver)
    })
}

#[test]
fn a_cluster_with_a_token_works_and_refuses_calls_without_it() {
    let with_token = GrpcConfig {
        token: Some("s3cret-token".into()),
        ..config()
    };
    let out = on_threads(connect(2, with_token), |mut t| {
        let mut values = input(t.rank(), 10);
        all_reduce_sum(&mut t, &mut values).unwrap();
        let other = 1 - t.rank();
        let calls = [None, Some("wrong-token"), Some("s3cret-token")]
            .map(|token| raw_calls(t.local_addr(), other, token));
        t.shutdown().unwrap();
        (values, calls)
    });
    assert_eq!(out[0].0, out[1].0);
    for (_, [missing, wrong, right]) in out {
        assert_eq!(missing, (Code::Unauthenticated, Code::Unauthenticated));
        assert_eq!(wrong, (Code::Unauthenticated, Code::Unauthenticated));
        // With the token the calls get through: the stream of that rank is already open.
        assert_eq!(right, (Code::Ok, Code::AlreadyExists));
    }
}

#[test]
fn a_rank_with_another_token_cannot_join() {
    let configs = ["s3cret", "other"]
        .map(|token| GrpcConfig {
            token: Some(token.into()),
            connect_timeout: Duration::from_secs(3),
            ..config()
        })
        .to_vec();
    let start = Instant::now();
    let out = try_connect(configs);
    assert!(start.elapsed() < Duration::from_secs(10));
    // A rank whose handshake was refused leaves; the other may then find it gone rather
    // than be refused itself.
    let mut refused = 0;
    for (rank, result) in out.into_iter().enumerate() {
        let err = result.unwrap_err();
        assert_eq!(err.rank(), Some(1 - rank), "{err}");
        let message = err.to_string();
        if message.contains("missing or wrong cluster token") {
            refused += 1;
        } else {
            assert!(message.contains("could not be reached"), "{message}");
        }
    }
    assert!(refused >= 1);
}

#[test]
fn a_crashed_peer_is_reported_at_once_after_what_it_sent() {
    let mut ranks = connect(2, config());
    let crashing = ranks.pop().unwrap();
    let survivor = ranks.pop().unwrap();
    let crasher = thread::spawn(move || {
        let mut t = crashing;
        t.send(0, 5, vec![5]).unwrap();
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
    assert_eq!(t.recv(1, 5).unwrap(), vec![5]);
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
fn shutdown_right_after_sending_delivers_everything() {
    let messages: Vec<Vec<u8>> = (0..40u64)
        .map(|i| SplitMix(i).bytes(if i == 39 { 3 << 20 } else { 100 << 10 }))
        .collect();
    let out = on_threads(connect(2, config()), |mut t| {
        if t.rank() == 0 {
            for (tag, message) in messages.iter().enumerate() {
                t.send(1, tag as u64, message.clone()).unwrap();
            }
            t.shutdown().unwrap();
            vec![]
        } else {
            // Rank 0 is already shutting down when rank 1 starts reading.
            thread::sleep(Duration::from_millis(300));
            let got = (0..messages.len() as u64)
                .map(|tag| t.recv(0, tag).unwrap())
                .collect();
            t.shutdown().unwrap();
            got
        }
    });
    assert!(out[1] == messages);
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
fn listen_addresses_bind_loopback_or_every_interface() {
    let at = |a: &str| listen_address(a).unwrap().to_string();
    assert_eq!(at("127.0.0.1:5000"), "127.0.0.1:5000");
    assert_eq!(at("[::1]:5000"), "[::1]:5000");
    assert_eq!(at("worker-1.job.svc:2222"), "0.0.0.0:2222");
    assert_eq!(at("10.0.0.7:2222"), "0.0.0.0:2222");
    assert_eq!(at("[fd00::7]:2222"), "[::]:2222");
    assert_eq!(at("http://worker-0:2222"), "0.0.0.0:2222");
    assert!(listen_address("worker-0").is_err());
    assert!(listen_address("worker-0:http").is_err());
}

#[test]
fn a_single_rank_needs_no_peer() {
    let mut ranks = connect(1, config());
    let mut t = ranks.pop().unwrap();
    assert_eq!((t.rank(), t.world_size()), (0, 1));
    let mut values = vec![1.5, -2.0];
    all_reduce_sum(&mut t, &mut values).unwrap();
    assert_eq!(values, vec![1.5, -2.0]);
    t.shutdown().unwrap();
}
