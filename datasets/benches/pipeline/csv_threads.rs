//! The `csv_threads` case: the benchmark CSV (200k rows × 64 floats + label) parsed
//! start to end by `CsvDataset` on the caller's thread and with
//! `with_parse_threads(Fixed(2))`, in alternating rounds.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use datasets::{CsvDataset, ParallelCalls};

use super::{consume, median, schema, secs, ROWS};

const ROUNDS: usize = 5;

fn parse(path: &Path, threads: Option<usize>) -> f64 {
    let start = Instant::now();
    let ds = CsvDataset::open(path, schema()).expect("open");
    let (rows, check) = match threads {
        Some(n) => consume(&mut ds.with_parse_threads(ParallelCalls::Fixed(n))),
        None => consume(&mut { ds }),
    };
    let t = secs(start.elapsed());
    black_box(check);
    assert_eq!(rows, ROWS);
    ROWS as f64 / t
}

pub fn bench(path: &Path, bytes: u64) {
    let (mut one, mut two, mut ratios) = (vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        let (a, b) = if round % 2 == 0 {
            let a = parse(path, None);
            (a, parse(path, Some(2)))
        } else {
            let b = parse(path, Some(2));
            (parse(path, None), b)
        };
        println!(
            "csv_threads round {}: one thread {a:.0} rows/s, with_parse_threads(Fixed(2)) \
             {b:.0} rows/s (ratio {:.2})",
            round + 1,
            b / a
        );
        one.push(a);
        two.push(b);
        ratios.push(b / a);
    }
    let mb_per_row = bytes as f64 / 1e6 / ROWS as f64;
    let (one, two) = (median(one), median(two));
    println!(
        "csv parse, {ROWS} rows x 64 floats, median of {ROUNDS} rounds: one thread {one:.0} \
         rows/s ({:.0} MB/s), with_parse_threads(Fixed(2)) {two:.0} rows/s ({:.0} MB/s) = \
         {:.2}x",
        one * mb_per_row,
        two * mb_per_row,
        median(ratios)
    );
}
