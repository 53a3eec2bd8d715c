//! The same-host lane: chosen for every peer of a cluster on loopback, exact and lossless
//! like gRPC, and left for gRPC whenever it cannot be used or is refused.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use std::time::Duration;

use super::super::lane::{dial_lane, LaneDirectory};
use super::exchange::delivers_everything_though_the_sender_shuts_down_at_once;
use super::failures::crash_is_reported_at_once_after_what_was_sent;
use super::{
    assert_exact_sums, connect, input, lane_config, listeners, on_threads, try_connect_on,
};
use crate::cluster::{same_host_lane_from_env, SAME_HOST_LANE};
use crate::distribute::testing::{bits, SplitMix};
use crate::distribute::{all_reduce_sum, GrpcConfig, GrpcTransport, Transport};

/// The socket rank `address` listens on for lanes.
fn socket_of(address: &str) -> std::path::PathBuf {
    LaneDirectory::private()
        .unwrap()
        .socket_path(address)
        .unwrap()
}

/// Every other rank of a cluster of `n`, seen from `rank`.
fn others(rank: usize, n: usize) -> Vec<usize> {
    (0..n).filter(|&r| r != rank).collect()
}

/// The all-reduced sums of seeded random values of each length, on every rank (bits).
fn random_sums(ranks: Vec<GrpcTransport>, lens: &[usize]) -> Vec<Vec<Vec<u32>>> {
    on_threads(ranks, |mut t| {
        let sums = lens
            .iter()
            .map(|&len| {
                let mut values = SplitMix(t.rank() as u64 * 31 + len as u64).f32s(len);
                all_reduce_sum(&mut t, &mut values).unwrap();
                bits(&values)
            })
            .collect();
        t.shutdown().unwrap();
        sums
    })
}

#[test]
fn every_peer_on_loopback_gets_a_lane_and_sums_are_exact_on_2_to_5_ranks() {
    // On 4 and 5 ranks the small lengths go by halving and doubling, to peers that are not
    // neighbours on the ring (on 5, rank 1 hands its values to rank 0 and gets the sums back).
    let lens = [1, 1001, (5 << 20) / 4 + 1];
    for n in 2..=5 {
        let ranks = connect(n, lane_config());
        for t in &ranks {
            assert_eq!(t.same_host_peers(), others(t.rank(), n), "n={n}");
            assert_eq!(t.shared_memory_peers(), others(t.rank(), n), "n={n}");
        }
        assert_exact_sums(ranks, &lens);
        // Rounded sums: the lane carries the same bytes as gRPC, bit for bit.
        let random_lens = [3, 70_001];
        let over_lanes = random_sums(connect(n, lane_config()), &random_lens);
        let grpc_only = GrpcConfig {
            same_host_lane: false,
            ..lane_config()
        };
        let over_grpc = random_sums(connect(n, grpc_only), &random_lens);
        assert!(over_lanes == over_grpc, "n={n}: the lanes changed a sum");
        let sockets_only = GrpcConfig {
            shared_memory: false,
            ..lane_config()
        };
        let ranks = connect(n, sockets_only);
        assert!(ranks.iter().all(|t| t.shared_memory_peers().is_empty()));
        let over_sockets = random_sums(ranks, &random_lens);
        assert!(
            over_sockets == over_grpc,
            "n={n}: the lanes' sockets changed a sum"
        );
    }
}

#[test]
fn five_mib_both_ways_and_out_of_order_tags_over_the_lane() {
    let big = SplitMix(5).bytes(5 << 20);
    let out = on_threads(connect(2, lane_config()), |mut t| {
        assert_eq!(t.same_host_peers(), vec![1 - t.rank()]);
        let peer = 1 - t.rank();
        let r = t.rank() as u8;
        for (tag, byte) in [(7, 1), (9, 2), (7, 3), (9, 4)] {
            t.send(peer, tag, vec![r, byte]).unwrap();
        }
        t.send(peer, 42, big.clone()).unwrap();
        let mut got = vec![
            t.recv(peer, 9).unwrap(),
            t.recv(peer, 7).unwrap(),
            t.recv(peer, 9).unwrap(),
        ];
        // A lane message is lent as the one vector it was read into.
        let mut lent_pieces = 0;
        t.recv_lent(peer, 42, &mut |lent| {
            lent_pieces = lent.pieces().count();
            got.push(lent.pieces().flatten().copied().collect());
            Ok(())
        })
        .unwrap();
        got.push(t.recv(peer, 7).unwrap());
        t.shutdown().unwrap();
        (got, lent_pieces)
    });
    for (rank, (got, lent_pieces)) in out.into_iter().enumerate() {
        let p = (1 - rank) as u8;
        assert_eq!(got[..3], [vec![p, 2], vec![p, 1], vec![p, 4]]);
        assert!(got[3] == big, "rank {rank}: the 5 MiB message differs");
        assert_eq!(got[4], vec![p, 3]);
        assert_eq!(lent_pieces, 1);
    }
}

#[test]
fn messages_past_a_full_shared_ring_cross_the_socket_in_order() {
    // 40 MiB held unread in the inbox: the 32 MiB ring fills, the rest takes the socket.
    let message = |i: usize| -> Vec<u8> {
        let mut bytes = SplitMix(i as u64).bytes((1 << 20) - 8 * i);
        bytes[0] = i as u8;
        bytes
    };
    let out = on_threads(connect(2, lane_config()), |mut t| {
        let peer = 1 - t.rank();
        let got: Vec<Vec<u8>> = if t.rank() == 0 {
            assert_eq!(t.shared_memory_peers(), vec![1]);
            (0..40).for_each(|i| t.send(peer, 3, message(i)).unwrap());
            t.send(peer, 4, vec![1]).unwrap();
            Vec::new()
        } else {
            assert_eq!(t.recv(peer, 4).unwrap(), vec![1]);
            (0..40).map(|_| t.recv(peer, 3).unwrap()).collect()
        };
        t.shutdown().unwrap();
        got
    });
    for (i, got) in out[1].iter().enumerate() {
        assert!(*got == message(i), "message {i} differs");
    }
}

#[test]
fn small_messages_sent_in_place_and_queued_arrive_in_order() {
    // 64 KiB messages, sent in place until the socket is full, then in part, then queued
    // behind the rest; and a large one, always queued, among them.
    let message = |i: usize| -> Vec<u8> {
        let len = if i == 40 { 3 << 20 } else { (64 << 10) - i };
        vec![i as u8; len]
    };
    let out = on_threads(connect(2, lane_config()), |mut t| {
        let peer = 1 - t.rank();
        let got: Vec<Vec<u8>> = if t.rank() == 0 {
            (0..100).for_each(|i| t.send(peer, 3, message(i)).unwrap());
            Vec::new()
        } else {
            (0..100).map(|_| t.recv(peer, 3).unwrap()).collect()
        };
        t.shutdown().unwrap();
        got
    });
    for (i, got) in out[1].iter().enumerate() {
        assert!(*got == message(i), "message {i} differs");
    }
}

#[test]
fn with_the_lane_turned_off_everything_goes_over_grpc() {
    let off = GrpcConfig {
        same_host_lane: false,
        ..lane_config()
    };
    std::env::set_var(SAME_HOST_LANE, "0");
    let from_env = GrpcConfig {
        same_host_lane: same_host_lane_from_env(),
        ..lane_config()
    };
    std::env::remove_var(SAME_HOST_LANE);
    assert!(same_host_lane_from_env());
    for config in [off, from_env] {
        let out = on_threads(connect(3, config), |mut t| {
            assert!(t.same_host_peers().is_empty());
            let mut values = input(t.rank(), 1001);
            all_reduce_sum(&mut t, &mut values).unwrap();
            t.shutdown().unwrap();
            values
        });
        assert!(out[0] == out[1] && out[1] == out[2]);
        assert_eq!(out[0][1], 7.0 * 3.0 + 13.0 * 3.0);
    }
}

#[test]
fn shutdown_right_after_sending_delivers_everything_over_the_lane() {
    delivers_everything_though_the_sender_shuts_down_at_once(lane_config());
}

#[test]
fn a_crashed_peer_is_reported_at_once_to_a_rank_waiting_on_its_lane() {
    crash_is_reported_at_once_after_what_was_sent(lane_config());
}

#[test]
fn lanes_with_a_wrong_token_and_strangers_are_refused_and_the_cluster_goes_on() {
    let with_token = GrpcConfig {
        token: Some("s3cret".into()),
        ..lane_config()
    };
    let out = on_threads(connect(2, with_token), |mut t| {
        assert_eq!(t.same_host_peers(), vec![1 - t.rank()]);
        let (me, other) = (t.rank(), 1 - t.rank());
        let socket = socket_of(&t.local_addr().to_string());
        // Another cluster's token, no token, or the right one for a rank that has its lane.
        for token in [Some(&b"wrong"[..]), None, Some(&b"s3cret"[..])] {
            let err = dial_lane(&socket, other, 2, token, me, 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(&format!("rank {me} refused it")), "{err}");
        }
        // A stranger's bytes: the connection is dropped.
        let mut stranger = UnixStream::connect(&socket).unwrap();
        stranger
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stranger
            .write_all(b"GET / HTTP/1.1\r\nHost: estimator\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        match stranger.read_to_end(&mut answer) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("a stranger got {other:?}: {answer:?}"),
        }
        let mut values = input(me, 1001);
        all_reduce_sum(&mut t, &mut values).unwrap();
        t.shutdown().unwrap();
        values
    });
    assert!(out[0] == out[1]);
    assert_eq!(out[0][1], 7.0 * 2.0 + 13.0);
}

#[test]
fn a_rank_whose_socket_cannot_be_used_is_reached_over_grpc() {
    let (listeners, addresses) = listeners(2);
    // A directory where rank 1's socket would go: it can neither be bound nor replaced.
    let blocked = socket_of(&addresses[1]);
    // A killed process of an earlier run may have left its socket at this port's path.
    let _ = std::fs::remove_file(&blocked);
    std::fs::create_dir_all(blocked.join("in-the-way")).unwrap();
    let ranks: Vec<GrpcTransport> = try_connect_on(listeners, &addresses, vec![lane_config(); 2])
        .into_iter()
        .map(|t| t.expect("connect"))
        .collect();
    std::fs::remove_dir_all(&blocked).unwrap();
    assert!(ranks[0].same_host_peers().is_empty());
    assert_eq!(ranks[1].same_host_peers(), vec![0]);
    let out = on_threads(ranks, |mut t| {
        let peer = 1 - t.rank();
        t.send(peer, 3, vec![t.rank() as u8; 2 << 20]).unwrap();
        let got = t.recv(peer, 3).unwrap();
        let mut values = input(t.rank(), 1001);
        all_reduce_sum(&mut t, &mut values).unwrap();
        t.shutdown().unwrap();
        (got, values)
    });
    assert!(out[0].0 == vec![1; 2 << 20] && out[1].0 == vec![0; 2 << 20]);
    assert!(out[0].1 == out[1].1);
}
