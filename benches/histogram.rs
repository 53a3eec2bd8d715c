//! Weight histograms: TensorFlow's ~1,500 exponential buckets counted over the weights of
//! MNIST's 784-1024-1024-10 network (1.87M values, normally distributed around 0 at the
//! scale of initialised weights), with the bucket found from the logarithm (what
//! `histogram_buckets` does) against a binary search over the edges (what it did before).
//!
//! Run: `cargo bench --bench histogram` (add `-- --rounds 9`). The two alternate within
//! every round (this machine's speed drifts); the report gives medians and the median of
//! the per-round ratios.

use std::time::Instant;

use estimator::summary::{default_bucket_limits, histogram_buckets};

const VALUES: usize = 784 * 1024 + 1024 * 1024 + 1024 * 10;

/// The same counts by binary search, and nothing else.
fn counts_by_search(values: &[f32]) -> Vec<f64> {
    let limits = default_bucket_limits();
    let mut counts = vec![0.0_f64; limits.len()];
    for &v in values.iter().filter(|v| v.is_finite()) {
        counts[limits.partition_point(|&limit| limit <= f64::from(v))] += 1.0;
    }
    counts
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 5;
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        if w[0] == "--rounds" {
            rounds = w[1].parse().expect("--rounds N");
        }
    }
    // Box-Muller over a xorshift stream: N(0, 0.03), the scale of a Glorot-initialised layer.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let values: Vec<f32> = (0..VALUES)
        .map(|_| {
            let r = (-2.0 * uniform().ln()).sqrt();
            (0.03 * r * (std::f64::consts::TAU * uniform()).cos()) as f32
        })
        .collect();
    let counted = histogram_buckets(&values).bucket_counts.iter().sum::<f64>();
    assert_eq!(counted, counts_by_search(&values).iter().sum::<f64>());

    let (mut fast, mut search, mut ratios) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let start = Instant::now();
        std::hint::black_box(histogram_buckets(std::hint::black_box(&values)));
        let a = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        std::hint::black_box(counts_by_search(std::hint::black_box(&values)));
        let b = start.elapsed().as_secs_f64() * 1e3;
        println!(
            "round {round}: histogram_buckets {a:.1} ms | binary search {b:.1} ms | {:.2}x",
            b / a
        );
        fast.push(a);
        search.push(b);
        ratios.push(b / a);
    }
    println!(
        "median over {VALUES} values: histogram_buckets {:.1} ms, binary search {:.1} ms, per-round ratio {:.2}x",
        median(fast),
        median(search),
        median(ratios)
    );
}
