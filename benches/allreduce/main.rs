//! Ring all-reduce over the gRPC transport (HTTP/2 on loopback), over its same-host lane
//! (a Unix-domain socket per peer), the lane with its shared memory, and over mutual TLS,
//! against the same ring over raw TCP and a plain socket pair.
//!
//! Run: `cargo bench --bench allreduce` (add `-- --sizes 1,16 --ranks 2 --rounds 3` for a
//! quick run, `--sizes-kib 428` for sizes in KiB (the MNIST network's gradients: an
//! all-reduce bound by latency), `--segment-kib 4096` to cap messages at other than 1 MiB,
//! `--window-kib 0` to send a ring's whole first hop at once instead of 1 MiB of each hop in
//! flight, `--halving-doubling-kib 0` to send every all-reduce round the ring (by default
//! those of at most 1 MiB over 4 ranks or more go by halving and doubling),
//! `--compression bf16` to send 16-bit values, `--threads 4` to share each rank's encode,
//! fold and finalize passes with a pool of that many threads, as a training task's
//! all-reduce does, `--only shm,pair` to time only those, so that two builds can be run
//! alternately at many rounds). Its heap keeps what it frees as a training process's does;
//! `GLIBC_TUNABLES=` in its environment leaves glibc's defaults instead.
//!
//! Every rank is a thread of this process with its own transports: a `GrpcTransport` with
//! the same-host lane off (everything over HTTP/2), one with the lane but without its shared
//! memory (every byte through the socket), one with both (the default for peers on
//! 127.0.0.1), one over mutual TLS (certificates of a CA made for the run; lane off), and
//! the raw-TCP ring of `tcp_ring.rs`. All run the crate's ring all-reduce, so the
//! comparison is like for like. Each round times them, then a plain stream of the same
//! bytes between two sockets ("pair"), interleaved (A B C D E F, A B C D E F, …) because
//! this machine's speed drifts; the report gives medians and the medians of the per-round
//! ratios.
//!
//! algbw = buffer bytes / time; busbw = algbw · 2(n−1)/n, the bytes each rank moves per
//! second in a ring all-reduce (NCCL's convention), comparable across rank counts.

mod args;
mod tcp_ring;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use args::{parse_args, Args, GRPC, LANE, MIB, OPS, PAIR, SHM, TCP, TLS};
use tcp_ring::{stream_pair, TcpTransport};

use estimator::cluster::{issue_certificates, write_certificates};
use estimator::distribute::{
    all_reduce_sum_with, ClusterTls, GrpcConfig, GrpcTransport, Transport,
};

fn main() {
    let args = parse_args();
    // As a training process does (`GLIBC_TUNABLES=` runs with glibc's defaults instead).
    let heap = match estimator::host_heap::keep_freed_memory() {
        true => "freed memory kept",
        false => "heap as set",
    };
    let small = match args.collective.halving_doubling_bytes {
        0 => "ring only".to_string(),
        bytes => format!("halving and doubling up to {} KiB", bytes >> 10),
    };
    let window = match args.collective.window_bytes {
        usize::MAX => "no window".to_string(),
        bytes => format!("{} KiB of each hop in flight", bytes >> 10),
    };
    println!(
        "all-reduce (sum), {small}, {} KiB segments at most, {window}, {} \
         on the wire, {} thread(s) per rank, {heap}, median of {} rounds, loopback, {} vCPU",
        args.collective.segment_bytes >> 10,
        args.collective.compression,
        args.collective.threads,
        args.rounds,
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:>5} {:>5} | {:>8} {:>6} | {:>8} {:>6} | {:>8} {:>6} | {:>6} | {:>8} {:>6} | {:>6} | {:>8} {:>8} {:>8} {:>9} {:>9}",
        "ranks", "size", "gRPC ms", "busbw", "lane ms", "busbw", "shm ms", "busbw", "TLS bw",
        "TCP ms", "busbw", "pair", "gRPC/TCP", "shm/TCP", "TLS/gRPC", "lane/pair", "shm/pair"
    );
    for &n in &args.ranks {
        run_ranks(n, &args);
    }
}

/// What one rank measured, per (size, round), in the order of [`OPS`].
type Timings = Vec<[Duration; 6]>;

/// `n` listeners on free loopback ports and their addresses.
fn listeners(n: usize) -> (Vec<TcpListener>, Vec<String>) {
    (0..n)
        .map(|_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = l.local_addr().unwrap().to_string();
            (l, a)
        })
        .unzip()
}

/// A CA and a certificate per rank, valid for 127.0.0.1, loaded.
fn cluster_tls(n: usize, dir: &std::path::Path) -> Vec<Arc<ClusterTls>> {
    let tasks: Vec<_> = (0..n)
        .map(|r| (format!("worker:{r}"), vec!["127.0.0.1".to_string()]))
        .collect();
    let (ca, issued) = issue_certificates("allreduce bench CA", &tasks).unwrap();
    write_certificates(dir, &ca, &issued)
        .unwrap()
        .iter()
        .map(|files| Arc::new(ClusterTls::load(files).unwrap()))
        .collect()
}

fn run_ranks(n: usize, args: &Args) {
    let clusters: Vec<(Vec<TcpListener>, Vec<String>)> = (0..4).map(|_| listeners(n)).collect();
    let certificates = tempfile::tempdir().unwrap();
    let tls = cluster_tls(n, certificates.path());
    let tcp = TcpTransport::cluster(n);
    let (pair_tx, pair_rx) = stream_pair();
    let mut pair_ends = vec![Some(pair_tx), Some(pair_rx)];
    pair_ends.resize_with(n, || None);
    let barrier = Barrier::new(n);
    let mut listeners: Vec<Vec<Option<TcpListener>>> = clusters
        .iter()
        .map(|_| (0..n).map(|_| None).collect())
        .collect();
    let addresses: Vec<Vec<String>> = clusters.iter().map(|(_, a)| a.clone()).collect();
    for (c, (ls, _)) in clusters.into_iter().enumerate() {
        for (rank, l) in ls.into_iter().enumerate() {
            listeners[c][rank] = Some(l);
        }
    }
    let per_rank: Vec<Timings> = thread::scope(|scope| {
        let handles: Vec<_> = tls
            .into_iter()
            .zip(tcp)
            .zip(pair_ends)
            .enumerate()
            .map(|(rank, ((tls, tcp), pair))| {
                let mine: Vec<TcpListener> = listeners
                    .iter_mut()
                    .map(|ls| ls[rank].take().unwrap())
                    .collect();
                let (addresses, barrier) = (&addresses, &barrier);
                scope.spawn(move || {
                    let plain = GrpcConfig {
                        peer_timeout: Duration::from_secs(120),
                        same_host_lane: false,
                        ..GrpcConfig::default()
                    };
                    let configs = [
                        plain.clone(),
                        GrpcConfig {
                            same_host_lane: true,
                            shared_memory: false,
                            ..plain.clone()
                        },
                        GrpcConfig {
                            same_host_lane: true,
                            ..plain.clone()
                        },
                        GrpcConfig {
                            tls: Some(tls),
                            ..plain
                        },
                    ];
                    let transports: Vec<GrpcTransport> = mine
                        .into_iter()
                        .zip(configs)
                        .enumerate()
                        .map(|(c, (listener, config))| {
                            GrpcTransport::connect_with_listener(
                                rank,
                                &addresses[c],
                                listener,
                                config,
                            )
                            .unwrap_or_else(|e| panic!("{} cluster: {e}", OPS[c]))
                        })
                        .collect();
                    assert_eq!(
                        transports[LANE].same_host_peers().len(),
                        n - 1,
                        "lanes to every peer"
                    );
                    assert!(transports[GRPC].same_host_peers().is_empty());
                    assert!(transports[LANE].shared_memory_peers().is_empty());
                    assert_eq!(
                        transports[SHM].shared_memory_peers().len(),
                        n - 1,
                        "shared memory with every peer"
                    );
                    match args.collective.threads {
                        1 => rank_loop(transports, tcp, pair, barrier, args),
                        threads => rayon::ThreadPoolBuilder::new()
                            .num_threads(threads)
                            .build()
                            .unwrap()
                            .install(|| rank_loop(transports, tcp, pair, barrier, args)),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // A round lasts as long as its slowest rank.
    let mut i = 0;
    for &size in &args.sizes {
        let bytes = size as f64;
        let size = match size % MIB {
            0 => format!("{}M", size / MIB),
            _ => format!("{}K", size >> 10),
        };
        let rounds: Vec<[f64; 6]> = (0..args.rounds)
            .map(|_| {
                let round = [0, 1, 2, 3, 4, 5].map(|k| {
                    per_rank
                        .iter()
                        .map(|t| t[i][k])
                        .max()
                        .unwrap()
                        .as_secs_f64()
                });
                i += 1;
                round
            })
            .collect();
        let median_of = |k: usize| median(rounds.iter().map(|r| r[k]).collect());
        // Speed of `num` relative to `den`: above 100 % is faster.
        let ratio =
            |num: usize, den: usize| median(rounds.iter().map(|r| r[den] / r[num]).collect());
        let bus = 2.0 * (n - 1) as f64 / n as f64;
        let busbw = |k: usize| bytes / median_of(k) / 1e9 * bus;
        let pair_gbps = bytes / median_of(PAIR) / 1e9;
        let of_pair = |k: usize| {
            median(
                rounds
                    .iter()
                    .map(|r| (bytes / r[k] * bus) / (bytes / r[PAIR]))
                    .collect(),
            )
        };
        // A figure of transports not timed (`--only`) is "-".
        let show = |ks: &[usize], value: f64, decimals: usize, unit: &str| match ks
            .iter()
            .all(|&k| args.timed[k])
        {
            true => format!("{value:.decimals$}{unit}"),
            false => "-".to_string(),
        };
        let (ms, bw) = (
            |k: usize| {
                let ms = median_of(k) * 1e3;
                show(&[k], ms, if ms < 10.0 { 2 } else { 1 }, "")
            },
            |k: usize| show(&[k], busbw(k), 2, ""),
        );
        let percent = |a: usize, b: usize| show(&[a, b], ratio(a, b) * 100.0, 0, "%");
        let times_pair = |k: usize| show(&[k, PAIR], of_pair(k), 2, "x");
        println!(
            "{n:>5} {size:>5} | {:>8} {:>6} | {:>8} {:>6} | {:>8} {:>6} | {:>6} | {:>8} {:>6} | {:>6} | {:>8} {:>8} {:>8} {:>9} {:>9}",
            ms(GRPC),
            bw(GRPC),
            ms(LANE),
            bw(LANE),
            ms(SHM),
            bw(SHM),
            bw(TLS),
            ms(TCP),
            bw(TCP),
            show(&[PAIR], pair_gbps, 2, ""),
            percent(GRPC, TCP),
            percent(SHM, TCP),
            percent(TLS, GRPC),
            times_pair(LANE),
            times_pair(SHM),
        );
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One rank: for every size, a warm-up of every transport, then the interleaved rounds.
fn rank_loop(
    mut grpc: Vec<GrpcTransport>,
    mut tcp: TcpTransport,
    mut pair: Option<TcpStream>,
    barrier: &Barrier,
    args: &Args,
) -> Timings {
    let rank = tcp.rank();
    let mut timings = Vec::new();
    let expected: f32 = (1..=tcp.world_size()).map(|r| r as f32).sum();
    for &size in &args.sizes {
        let mut values = vec![0.0f32; size / 4];
        let mut timed = |values: &mut [f32], op: usize| {
            values.fill(rank as f32 + 1.0);
            barrier.wait();
            let start = Instant::now();
            let config = &args.collective;
            match op {
                PAIR => {
                    if let Some(stream) = pair.as_mut() {
                        stream_bytes(stream, rank, size)
                    }
                }
                TCP => all_reduce_sum_with(&mut tcp, values, config).expect("TCP all-reduce"),
                k => all_reduce_sum_with(&mut grpc[k], values, config)
                    .unwrap_or_else(|e| panic!("{} all-reduce: {e}", OPS[k])),
            }
            let elapsed = start.elapsed();
            barrier.wait();
            if op != PAIR {
                assert!(
                    values.iter().all(|&v| v == expected),
                    "wrong {} sum",
                    OPS[op]
                );
            }
            elapsed
        };
        // Warm-up, checking every transport sums right.
        for op in (0..OPS.len()).filter(|&op| args.timed[op]) {
            timed(&mut values, op);
        }
        for _ in 0..args.rounds {
            timings.push([0, 1, 2, 3, 4, 5].map(|op| match args.timed[op] {
                true => timed(&mut values, op),
                false => Duration::ZERO,
            }));
        }
    }
    for transport in grpc {
        transport.shutdown().expect("gRPC shutdown");
    }
    timings
}

/// Rank 0 writes `len` bytes in 1 MiB writes, rank 1 reads them: raw loopback throughput.
fn stream_bytes(stream: &mut TcpStream, rank: usize, len: usize) {
    let mut chunk = vec![1u8; MIB];
    let mut left = len;
    while left > 0 {
        let n = left.min(MIB);
        if rank == 0 {
            stream.write_all(&chunk[..n]).unwrap();
        } else {
            stream.read_exact(&mut chunk[..n]).unwrap();
        }
        left -= n;
    }
}
