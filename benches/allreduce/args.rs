//! The bench's flags (see `main.rs`) and the transports each round times.

use estimator::distribute::{CollectiveConfig, Compression};

pub const MIB: usize = 1 << 20;

/// What each round times, in order.
pub const OPS: [&str; 6] = ["gRPC", "lane", "shm", "TLS", "TCP", "pair"];
pub const GRPC: usize = 0;
pub const LANE: usize = 1;
pub const SHM: usize = 2;
pub const TLS: usize = 3;
pub const TCP: usize = 4;
pub const PAIR: usize = 5;

pub struct Args {
    /// Buffer sizes in bytes.
    pub sizes: Vec<usize>,
    pub ranks: Vec<usize>,
    pub rounds: usize,
    pub collective: CollectiveConfig,
    /// Which of [`OPS`] are timed.
    pub timed: [bool; 6],
}

pub fn parse_args() -> Args {
    let mut args = Args {
        sizes: [1, 16, 64, 256].map(|mib| mib * MIB).to_vec(),
        ranks: vec![2, 4],
        rounds: 5,
        collective: CollectiveConfig::default(),
        timed: [true; 6],
    };
    let list = |v: &str| -> Vec<usize> {
        v.split(',')
            .map(|x| x.trim().parse().expect("a list of integers"))
            .collect()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--sizes" => {
                let mib = list(&it.next().expect("--sizes 1,16,…"));
                args.sizes = mib.iter().map(|mib| mib * MIB).collect();
            }
            "--sizes-kib" => {
                let kib = list(&it.next().expect("--sizes-kib 428,…"));
                args.sizes = kib.iter().map(|kib| kib << 10).collect();
            }
            "--ranks" => args.ranks = list(&it.next().expect("--ranks 2,4")),
            "--rounds" => args.rounds = it.next().expect("--rounds N").parse().unwrap(),
            "--segment-kib" => {
                let kib: usize = it.next().expect("--segment-kib N").parse().unwrap();
                args.collective.segment_bytes = kib << 10;
            }
            // 0: no window, every segment of the first hop sent at once.
            "--window-kib" => {
                let kib: usize = it.next().expect("--window-kib N").parse().unwrap();
                let bytes = if kib == 0 { usize::MAX } else { kib << 10 };
                args.collective = args.collective.with_window_bytes(bytes);
            }
            // 0: always the ring.
            "--halving-doubling-kib" => {
                let kib: usize = it
                    .next()
                    .expect("--halving-doubling-kib N")
                    .parse()
                    .unwrap();
                args.collective = args.collective.with_halving_doubling_bytes(kib << 10);
            }
            "--compression" => {
                let name = it.next().expect("--compression none|fp16|bf16");
                let compression: Compression = name.parse().unwrap();
                args.collective = args.collective.with_compression(compression);
            }
            "--threads" => {
                let threads = it.next().expect("--threads N").parse().unwrap();
                args.collective = args.collective.with_threads(threads);
            }
            "--only" => {
                let names = it.next().expect("--only grpc,lane,shm,tls,tcp,pair");
                args.timed = OPS.map(|op| {
                    names
                        .split(',')
                        .any(|name| name.trim().eq_ignore_ascii_case(op))
                });
                assert!(
                    args.timed.contains(&true),
                    "--only {names}: no such transport"
                );
            }
            // `cargo bench` passes --bench; ignore it and anything unknown.
            _ => {}
        }
    }
    assert!(args.ranks.iter().all(|&n| n >= 2), "ranks must be >= 2");
    args
}
