//! The all-reduce over the in-memory transport: sums, formats, algorithms and faults.

use std::time::{Duration, Instant};

use super::*;
use crate::distribute::testing::{bits, on_threads, SplitMix};
use crate::distribute::{Compression, InMemoryTransport};

fn cluster(n: usize) -> Vec<InMemoryTransport> {
    InMemoryTransport::cluster_with_timeout(n, Duration::from_secs(5))
}

fn inputs(n: usize, len: usize, seed: u64) -> Vec<Vec<f32>> {
    (0..n)
        .map(|r| SplitMix(seed * 1000 + r as u64).f32s(len))
        .collect()
}

fn sequential_sum(inputs: &[Vec<f32>]) -> Vec<f32> {
    let mut sum = vec![0.0f32; inputs[0].len()];
    for input in inputs {
        sum.iter_mut().zip(input).for_each(|(s, v)| *s += v);
    }
    sum
}

fn assert_identical_and_close(out: &[Vec<f32>], expected: &[f32], what: &str) {
    for (r, buf) in out.iter().enumerate() {
        assert_eq!(
            bits(buf),
            bits(&out[0]),
            "{what}: rank {r} differs from rank 0"
        );
        assert_eq!(buf.len(), expected.len());
        for (i, (got, want)) in buf.iter().zip(expected).enumerate() {
            assert!((got - want).abs() <= 1e-5, "{what}: [{i}] {got} vs {want}");
        }
    }
}

#[test]
fn sums_match_the_sequential_sum_and_are_bit_identical_across_ranks() {
    // 4 to 8 ranks: small buffers by halving and doubling, and round the ring.
    let ring = |config: CollectiveConfig| config.with_halving_doubling_bytes(0);
    let configs = [
        CollectiveConfig::default(),
        CollectiveConfig::with_segment_bytes(12),
        ring(CollectiveConfig::default()),
        ring(CollectiveConfig::with_segment_bytes(12)),
    ];
    for n in [1, 2, 3, 4, 5, 6, 7, 8] {
        for len in [0, 1, 2, 3, 5, 7, 64, 1001] {
            for config in &configs {
                let data = inputs(n, len, (n * 10_000 + len) as u64);
                let out = on_threads(cluster(n), |t| {
                    let mut values = data[t.rank()].clone();
                    all_reduce_sum_with(t, &mut values, config).unwrap();
                    values
                });
                let what = format!("n={n} len={len} {config:?}");
                assert_identical_and_close(&out, &sequential_sum(&data), &what);
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_segment_size_window_or_run() {
    let data = inputs(3, 500, 7);
    let run = |segment_bytes, window_bytes| {
        on_threads(cluster(3), |t| {
            let mut values = data[t.rank()].clone();
            let config =
                CollectiveConfig::with_segment_bytes(segment_bytes).with_window_bytes(window_bytes);
            all_reduce_sum_with(t, &mut values, &config).unwrap();
            values
        })
    };
    let reference = bits(&run(4, usize::MAX)[0]);
    for segment_bytes in [4, 40, 1 << 20] {
        // One segment in flight per hop, two, and the whole first hop at once.
        for window_bytes in [0, 80, usize::MAX] {
            for out in run(segment_bytes, window_bytes) {
                let what = format!("segment_bytes={segment_bytes} window={window_bytes}");
                assert_eq!(bits(&out), reference, "{what}");
            }
        }
    }
}

#[test]
fn compressed_sums_are_bit_identical_across_ranks_and_within_the_bound() {
    for compression in [Compression::Bf16, Compression::Fp16] {
        for (n, halving_doubling_bytes) in [
            (2, 0),
            (3, 0),
            (4, 0),
            (4, usize::MAX),
            (6, usize::MAX),
            (7, usize::MAX),
            (8, 0),
            (8, usize::MAX),
        ] {
            let len = 3001;
            let data = inputs(n, len, (n * 77) as u64);
            let config = CollectiveConfig::with_segment_bytes(256)
                .with_compression(compression)
                .with_halving_doubling_bytes(halving_doubling_bytes);
            let out = on_threads(cluster(n), |t| {
                let mut values = data[t.rank()].clone();
                all_reduce_sum_with(t, &mut values, &config).unwrap();
                values
            });
            let exact = sequential_sum(&data);
            let u = compression.unit_roundoff();
            for (r, buf) in out.iter().enumerate() {
                assert_eq!(bits(buf), bits(&out[0]), "{compression} n={n}: rank {r}");
            }
            let mut worst = 0.0f32;
            for i in 0..len {
                let magnitude: f32 = data.iter().map(|d| d[i].abs()).sum();
                let bound = n as f32 * u * magnitude;
                let error = (out[0][i] - exact[i]).abs();
                assert!(
                    error <= bound,
                    "{compression} n={n} [{i}]: {error} > {bound}"
                );
                worst = worst.max(error);
            }
            assert!(worst > 0.0, "{compression} n={n}: nothing was rounded");
            // The values everyone ends with are exactly representable in the format.
            assert!(out[0].iter().all(|v| compression.round(*v) == *v));
        }
    }
}

#[test]
fn the_mean_divides_by_the_world_size() {
    let data = inputs(4, 33, 3);
    let out = on_threads(cluster(4), |t| {
        let mut values = data[t.rank()].clone();
        all_reduce_mean(t, &mut values).unwrap();
        values
    });
    let expected: Vec<f32> = sequential_sum(&data).iter().map(|s| s / 4.0).collect();
    assert_identical_and_close(&out, &expected, "mean");
    let single = on_threads(cluster(1), |t| {
        let mut values = vec![1.5, -2.0];
        all_reduce_mean(t, &mut values).unwrap();
        values
    });
    assert_eq!(single[0], vec![1.5, -2.0]);
}

#[test]
fn consecutive_calls_of_different_lengths_do_not_mix_up() {
    let lens = [5, 0, 17, 1, 17];
    let out = on_threads(cluster(3), |t| {
        lens.iter()
            .enumerate()
            .map(|(call, &len)| {
                let mut values = vec![(t.rank() + call) as f32; len];
                let config = CollectiveConfig::with_segment_bytes(8);
                all_reduce_sum_with(t, &mut values, &config).unwrap();
                values
            })
            .collect::<Vec<_>>()
    });
    for rank_out in out {
        for (call, values) in rank_out.iter().enumerate() {
            let expected = (3 * call + 3) as f32;
            assert_eq!(values, &vec![expected; lens[call]], "call {call}");
        }
    }
}

#[test]
fn a_peer_that_never_answers_is_named_within_the_timeout() {
    let timeout = Duration::from_millis(300);
    let mut ranks = InMemoryTransport::cluster_with_timeout(3, timeout);
    let silent = ranks.pop().unwrap();
    let start = Instant::now();
    let out = on_threads(ranks, |t| {
        let mut values = vec![1.0f32; 10];
        all_reduce_sum(t, &mut values).unwrap_err()
    });
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // Rank 0 receives from rank 2 first on the ring.
    let err = &out[0];
    assert_eq!(err.rank(), Some(2), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("rank 2: did not answer rank 0 within"),
        "{message}"
    );
    assert!(
        message.contains("all-reduce reduce-scatter step 0"),
        "{message}"
    );
    drop(silent);
}

#[test]
fn by_halving_and_doubling_the_silent_partner_is_named() {
    let timeout = Duration::from_millis(300);
    let mut ranks = InMemoryTransport::cluster_with_timeout(4, timeout);
    let silent = ranks.pop().unwrap();
    let out = on_threads(ranks, |t| {
        let mut values = vec![1.0f32; 10];
        all_reduce_sum(t, &mut values).unwrap_err().to_string()
    });
    // Rank 3 is rank 1's partner in the first exchange and rank 2's in the second.
    assert!(
        out[1].starts_with("rank 3: did not answer rank 1"),
        "{}",
        out[1]
    );
    assert!(out[1].contains("reduce-scatter step 0"), "{}", out[1]);
    assert!(
        out[2].starts_with("rank 3: did not answer rank 2"),
        "{}",
        out[2]
    );
    assert!(out[2].contains("reduce-scatter step 1"), "{}", out[2]);
    drop(silent);
}

#[test]
fn outside_a_power_of_two_a_silent_guest_is_named_by_its_host() {
    let timeout = Duration::from_millis(300);
    let mut ranks = InMemoryTransport::cluster_with_timeout(5, timeout);
    let silent = ranks.remove(1);
    let out = on_threads(ranks, |t| {
        let mut values = vec![1.0f32; 10];
        all_reduce_sum(t, &mut values).unwrap_err().to_string()
    });
    // Rank 1 hands its values to rank 0 before rank 0 exchanges with anyone.
    assert!(
        out[0].starts_with("rank 1: did not answer rank 0"),
        "{}",
        out[0]
    );
    assert!(out[0].contains("reduce-scatter step 0"), "{}", out[0]);
    drop(silent);
}

#[test]
fn a_rank_with_another_length_is_reported() {
    let out = on_threads(cluster(2), |t| {
        let mut values = vec![1.0f32; 4 + 2 * t.rank()];
        all_reduce_sum(t, &mut values).unwrap_err()
    });
    assert_eq!(out[0].rank(), Some(1));
    assert_eq!(out[1].rank(), Some(0));
    assert!(out[0]
        .to_string()
        .contains("do all ranks pass buffers of the same length"));
}
