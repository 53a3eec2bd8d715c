//! The CPU backend's matrix product at the shapes of the MNIST-width network's training step
//! (784-128-64-10, batch 128): its ceiling for that step, on one thread and on a pool of
//! two, as the training loop runs it (a rayon pool per loop, `intra_op_threads`).
//!
//! Run: `cargo bench --bench matmul` (add `-- --rounds 9 --threads 1,2,4`). Thread counts
//! alternate within every round (this machine's speed drifts); the report gives each shape's
//! median GFLOP/s per thread count.

use std::time::Instant;

use burn::tensor::{Distribution, Tensor};
use estimator::device::CpuBackend;

/// `(name, m, k, n, lhs transposed)`: a large square product, the backend's ceiling on this
/// machine; then the forward first layer, its weight gradient (the batch transposed, a
/// strided operand as autodiff passes it) and the second layer. The square product comes
/// first because freeing its large buffers raises glibc's mmap threshold, as a training
/// process's first steps do: timed first, the small shapes' buffers would each be a fresh
/// mapping (page faults on every call; the weight gradient read 27 instead of 34 GFLOP/s).
const SHAPES: [(&str, usize, usize, usize, bool); 4] = [
    ("square     1024x1024 · 1024x1024", 1024, 1024, 1024, false),
    ("x·W1       128x784 · 784x128", 128, 784, 128, false),
    ("xᵀ·dz1     784x128 · 128x128", 784, 128, 128, true),
    ("h1·W2      128x128 · 128x64", 128, 128, 64, false),
];

/// GFLOP/s of `iterations` products `[m, k] · [k, n]` on the calling thread's pool.
fn gflops(m: usize, k: usize, n: usize, transposed: bool, iterations: usize) -> f64 {
    let device = Default::default();
    let normal = Distribution::Normal(0.0, 1.0);
    let lhs = if transposed {
        Tensor::<CpuBackend, 2>::random([k, m], normal, &device).transpose()
    } else {
        Tensor::<CpuBackend, 2>::random([m, k], normal, &device)
    };
    let rhs = Tensor::<CpuBackend, 2>::random([k, n], normal, &device);
    let started = Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(lhs.clone().matmul(rhs.clone()));
    }
    2.0 * (m * k * n * iterations) as f64 / started.elapsed().as_secs_f64() / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 5;
    let mut threads = vec![1, 2];
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        match w[0].as_str() {
            "--rounds" => rounds = w[1].parse().expect("--rounds N"),
            "--threads" => {
                threads = w[1]
                    .split(',')
                    .map(|t| t.parse().expect("--threads N,M,…"))
                    .collect()
            }
            _ => {}
        }
    }
    let pools: Vec<rayon::ThreadPool> = threads
        .iter()
        .map(|&t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .expect("a thread pool")
        })
        .collect();
    println!("Flex matmul, {rounds} rounds, threads {threads:?}; GFLOP/s (median)");
    for (name, m, k, n, transposed) in SHAPES {
        let iterations = (400_000_000 / (m * k * n)).max(10);
        let mut results = vec![Vec::new(); pools.len()];
        for round in 0..rounds {
            for i in 0..pools.len() {
                let p = (i + round) % pools.len();
                results[p].push(pools[p].install(|| gflops(m, k, n, transposed, iterations)));
            }
        }
        let line: Vec<String> = threads
            .iter()
            .zip(results)
            .map(|(t, r)| format!("{t} thread(s) {:.1}", median(r)))
            .collect();
        println!("{name}: {}", line.join(", "));
    }
}
