//! The `columnar` case: MNIST-width rows (784 f32 + class label), 60k of them in memory,
//! read epoch after epoch through `cache_table → shuffle → repeat → batch_columnar(128)
//! → prefetch(4)` against the `Example` path `cache → shuffle → repeat → batch(128) →
//! prefetch(4)`, in alternating rounds, after the first (cache-filling) epoch.
//!
//! The consumer does what a model's input step needs, a contiguous `[128, 784]` block
//! of features and the labels: `ColumnarBatch::dense` and `Labels::Class` already are;
//! `Vec<Example>` batches are copied row by row into a reused buffer. The `Example` path
//! is also timed without that copy, to show the pipeline alone.

use std::hint::black_box;
use std::time::Instant;

use datasets::{from_vec, Dataset, DatasetExt, Example, Label, Labels, SplitMix64};

use super::{median, secs};

const ROWS: usize = 60_000;
const WIDTH: usize = 784;
const BATCH: usize = 128;
/// Epochs timed per round, after the first.
const EPOCHS: usize = 3;
const ROUNDS: usize = 5;
const SHUFFLE: usize = 10_000;

fn examples() -> Vec<Example> {
    let mut rng = SplitMix64::new(11);
    (0..ROWS)
        .map(|_| Example {
            dense: (0..WIDTH).map(|_| rng.next_f64() as f32).collect(),
            categorical: Vec::new(),
            label: Label::Class(rng.below(10) as u32),
        })
        .collect()
}

/// Pulls batches until `rows` rows have passed; returns rows seen and a checksum.
fn pull<D, F>(ds: &mut D, rows: usize, mut use_batch: F) -> usize
where
    D: Dataset,
    F: FnMut(D::Item) -> usize,
{
    let mut seen = 0;
    while seen < rows {
        let batch = ds.next_item().expect("endless").expect("valid");
        seen += use_batch(batch);
    }
    seen
}

/// Rows per second after the first epoch, through `pipeline`, consuming with `use_batch`.
fn rate<D, F>(mut pipeline: D, mut use_batch: F) -> f64
where
    D: Dataset,
    F: FnMut(D::Item) -> usize,
{
    pull(&mut pipeline, ROWS, &mut use_batch);
    let start = Instant::now();
    let rows = pull(&mut pipeline, EPOCHS * ROWS, &mut use_batch);
    rows as f64 / secs(start.elapsed())
}

fn columnar(data: &[Example]) -> f64 {
    let pipeline = from_vec(data.to_vec())
        .cache_table()
        .shuffle(SHUFFLE, 42)
        .repeat(None)
        .batch_columnar(BATCH, false)
        .prefetch(4);
    rate(pipeline, |batch| {
        let Labels::Class(labels) = &batch.labels else {
            panic!("class labels")
        };
        black_box((&batch.dense[..], &labels[..]));
        batch.rows
    })
}

fn examples_path(data: &[Example], copy: bool) -> f64 {
    let pipeline = from_vec(data.to_vec())
        .cache()
        .shuffle(SHUFFLE, 42)
        .repeat(None)
        .batch(BATCH, false)
        .prefetch(4);
    let mut dense: Vec<f32> = Vec::with_capacity(BATCH * WIDTH);
    let mut labels: Vec<u32> = Vec::with_capacity(BATCH);
    rate(pipeline, move |batch| {
        if copy {
            dense.clear();
            labels.clear();
            for ex in &batch {
                dense.extend_from_slice(&ex.dense);
                labels.push(ex.label.class().unwrap_or(0));
            }
            black_box((&dense[..], &labels[..]));
        } else {
            black_box(&batch);
        }
        batch.len()
    })
}

pub fn bench() {
    let data = examples();
    let (mut old, mut bare, mut new, mut ratios) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        // Alternate which goes first so drift in the machine's load hits both alike.
        let (a, b, c) = if round % 2 == 0 {
            let a = examples_path(&data, true);
            let c = columnar(&data);
            (a, examples_path(&data, false), c)
        } else {
            let c = columnar(&data);
            let a = examples_path(&data, true);
            (a, examples_path(&data, false), c)
        };
        println!(
            "columnar round {}: Vec<Example> + copy {a:.0} rows/s, Vec<Example> alone {b:.0} \
             rows/s, columnar {c:.0} rows/s (ratio {:.2} against + copy)",
            round + 1,
            c / a
        );
        old.push(a);
        bare.push(b);
        new.push(c);
        ratios.push((c / a, c / b));
    }
    println!(
        "{ROWS} rows x {WIDTH} f32, shuffle({SHUFFLE}) + repeat + batch({BATCH}) + prefetch(4), \
         {EPOCHS} epochs after the first, median of {ROUNDS} rounds: cache + batch + copy {:.0} \
         rows/s, cache + batch alone {:.0} rows/s, cache_table + batch_columnar {:.0} rows/s \
         = {:.2}x (+ copy), {:.2}x (alone)",
        median(old),
        median(bare),
        median(new),
        median(ratios.iter().map(|r| r.0).collect()),
        median(ratios.iter().map(|r| r.1).collect()),
    );
}
