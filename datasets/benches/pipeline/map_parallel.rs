//! The `map_parallel` case: text rows of 784 floats parsed with `map`, with
//! `map_parallel` on 2 threads, and by two plain threads taking half the rows each (the
//! most any 2-thread stage could get from this machine), in alternating rounds.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use datasets::{Dataset, DatasetExt, ParallelCalls, SplitMix64};

use super::{median, secs};

const ROWS: usize = 10_000;
const ROUNDS: usize = 7;

/// Parse-like work per item: one text row of comma-separated floats to a `Vec<f32>`.
fn parse_row(line: Arc<str>) -> Vec<f32> {
    let mut out = Vec::with_capacity(784);
    out.extend(
        line.split(',')
            .map(|s| s.parse::<f32>().unwrap_or(f32::NAN)),
    );
    out
}

fn rows() -> Vec<Arc<str>> {
    let mut rng = SplitMix64::new(7);
    (0..ROWS)
        .map(|_| {
            let cells: Vec<String> = (0..784).map(|_| format!("{:.4}", rng.next_f64())).collect();
            Arc::from(cells.join(","))
        })
        .collect()
}

/// Rows per second through `map` (`parallel == false`) or `map_parallel`.
fn pipeline(rows: &[Arc<str>], parallel: bool) -> f64 {
    let source = datasets::from_vec(rows.to_vec());
    let mut ds: Box<dyn Dataset<Item = Vec<f32>>> = if parallel {
        Box::new(source.map_parallel(parse_row, ParallelCalls::Fixed(2)))
    } else {
        Box::new(source.map(parse_row))
    };
    let start = Instant::now();
    let (mut n, mut check) = (0, 0.0f32);
    while let Some(row) = ds.next_item() {
        check += row.expect("valid")[783];
        n += 1;
    }
    let t = secs(start.elapsed());
    black_box(check);
    assert_eq!(n, ROWS);
    ROWS as f64 / t
}

/// Rows per second with the rows split in two halves parsed on two scoped threads.
fn split(rows: &[Arc<str>]) -> f64 {
    let start = Instant::now();
    let (a, b) = rows.split_at(rows.len() / 2);
    let half = |part: &[Arc<str>]| part.iter().map(|r| parse_row(r.clone())[783]).sum::<f32>();
    let check = std::thread::scope(|s| {
        let other = s.spawn(|| half(a));
        half(b) + other.join().expect("no panic")
    });
    let t = secs(start.elapsed());
    black_box(check);
    ROWS as f64 / t
}

pub fn bench() {
    let rows = rows();
    let (mut seq, mut par, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        // Rotate which goes first so drift in the machine's load hits all alike.
        let mut r = [0.0; 3];
        for i in 0..3 {
            let which = (round + i) % 3;
            r[which] = match which {
                0 => pipeline(&rows, false),
                1 => pipeline(&rows, true),
                _ => split(&rows),
            };
        }
        println!(
            "map_parallel round {}: map {:.0} rows/s, map_parallel(Fixed(2)) {:.0} rows/s \
             (ratio {:.2}), two plain threads {:.0} rows/s (ratio {:.2})",
            round + 1,
            r[0],
            r[1],
            r[1] / r[0],
            r[2],
            r[2] / r[0]
        );
        seq.push(r[0]);
        par.push(r[1]);
        raw.push(r[2]);
        ratios.push((r[1] / r[0], r[2] / r[0]));
    }
    let par_ratio = median(ratios.iter().map(|r| r.0).collect());
    let raw_ratio = median(ratios.iter().map(|r| r.1).collect());
    println!(
        "parse {ROWS} text rows of 784 floats, median of {ROUNDS} rounds: map {:.0} rows/s, \
         map_parallel(Fixed(2)) {:.0} rows/s = {par_ratio:.2}x; two plain threads {:.0} \
         rows/s = {raw_ratio:.2}x",
        median(seq),
        median(par),
        median(raw)
    );
}
