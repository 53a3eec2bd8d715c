//! Messages and collectives between healthy ranks, from one rank to shutdown.

use std::thread;
use std::time::Duration;

use super::{assert_exact_sums, config, connect, expected_lanes, listeners, on_threads};
use crate::distribute::testing::SplitMix;
use crate::distribute::{all_reduce_sum, CollectiveFault, GrpcConfig, GrpcTransport, Transport};

#[test]
fn all_reduce_sums_are_exact_and_identical_on_2_3_and_4_ranks() {
    // The last length is over 4 MiB and divisible by none of 2, 3, 4.
    let lens = [1, 5, 1001, (5 << 20) / 4 + 1];
    for n in 2..=4 {
        assert_exact_sums(connect(n, config()), &lens);
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
            Err(CollectiveFault::Invalid(_))
        ));
        assert!(matches!(t.recv(3, 0), Err(CollectiveFault::Invalid(_))));
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

#[test]
fn shutdown_right_after_sending_delivers_everything() {
    delivers_everything_though_the_sender_shuts_down_at_once(config());
}

/// Rank 0 sends 40 messages (the last 3 MiB) to rank 1 and shuts down at once; rank 1,
/// reading only then, gets them all (over the lane too when `config` has it).
pub(super) fn delivers_everything_though_the_sender_shuts_down_at_once(config: GrpcConfig) {
    let messages: Vec<Vec<u8>> = (0..40u64)
        .map(|i| SplitMix(i).bytes(if i == 39 { 3 << 20 } else { 100 << 10 }))
        .collect();
    let out = on_threads(connect(2, config.clone()), |mut t| {
        assert_eq!(t.same_host_peers(), expected_lanes(&config, t.rank()));
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
fn a_single_rank_needs_no_peer() {
    let mut ranks = connect(1, config());
    let mut t = ranks.pop().unwrap();
    assert_eq!((t.rank(), t.world_size()), (0, 1));
    let mut values = vec![1.5, -2.0];
    all_reduce_sum(&mut t, &mut values).unwrap();
    assert_eq!(values, vec![1.5, -2.0]);
    t.shutdown().unwrap();
}
