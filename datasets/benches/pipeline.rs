//! Input pipeline benchmark (figures in BENCHMARKS.md, "Input pipeline").
//!
//! Run with `cargo bench -p datasets --bench pipeline`. It writes a 200k-row × 64-float
//! CSV to a temporary directory and measures first-pass CSV parsing, a cached epoch of
//! shuffle + batch(128) + prefetch, and MNIST IDX loading when the files are found
//! (`$MNIST_DIR` or `../shared/data/mnist`). If a Python with pandas is found
//! (`$BENCH_PYTHON`, `/tmp/venv-bench/bin/python`, or `python3`), `pandas.read_csv` is
//! timed on the same file for comparison. The `map_parallel` case
//! (`pipeline/map_parallel.rs`) parses text rows of 784 floats with `map` and with
//! `map_parallel` on 2 threads, in alternating rounds. The `columnar` case
//! (`pipeline/columnar.rs`) reads 60k MNIST-width rows epoch after epoch through
//! `cache_table` + `batch_columnar` against `cache` + `batch`; the `csv_threads` case
//! (`pipeline/csv_threads.rs`) parses the CSV on one thread and with
//! `with_parse_threads`, both in alternating rounds; the `tfrecord` case
//! (`pipeline/tfrecord.rs`) decodes MNIST-width tf.Examples from a TFRecord file into
//! columnar batches on one thread and two; the `parquet` case (`pipeline/parquet.rs`)
//! reads MNIST-width rows uncached from a Parquet file into columnar batches against the
//! same rows from CSV.
//!
//! A name after `--` runs only the cases whose name contains it: `csv`, `csv_threads`,
//! `mnist`, `pandas`, `map_parallel`, `columnar`, `tfrecord`, `parquet` (e.g. `cargo bench -p datasets --bench
//! pipeline -- map_parallel`).

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use datasets::{
    bundled, CsvDataset, Dataset, DatasetExt, Example, IdxDataset, Position, Schema, SplitMix64,
};

#[path = "pipeline/columnar.rs"]
mod columnar;
#[path = "pipeline/csv_threads.rs"]
mod csv_threads;
#[path = "pipeline/map_parallel.rs"]
mod map_parallel;
#[path = "pipeline/parquet.rs"]
mod parquet;
#[path = "pipeline/tfrecord.rs"]
mod tfrecord;

const ROWS: usize = 200_000;
const COLS: usize = 64;
const RUNS: usize = 3;

fn schema() -> Schema {
    (0..COLS)
        .fold(Schema::new(), |s, c| s.float(format!("f{c}")))
        .int("label")
        .label("label")
}

fn write_csv(path: &Path) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let header: Vec<String> = (0..COLS).map(|c| format!("f{c}")).collect();
    writeln!(out, "{},label", header.join(","))?;
    let mut rng = SplitMix64::new(2024);
    for _ in 0..ROWS {
        for _ in 0..COLS {
            // Values like real standardised-ish data: sign, 1-3 integer digits, 4 decimals.
            let v = (rng.next_f64() - 0.5) * 200.0;
            write!(out, "{v:.4},")?;
        }
        writeln!(out, "{}", rng.below(10))?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn consume<D: Dataset<Item = Example>>(ds: &mut D) -> (usize, f32) {
    let mut rows = 0;
    let mut check = 0.0f32;
    while let Some(ex) = ds.next_item() {
        let ex = ex.expect("bench data is valid");
        check += ex.dense[0];
        rows += 1;
    }
    (rows, check)
}

fn bench_csv_parse(path: &Path, bytes: u64) {
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut ds = CsvDataset::open(path, schema()).expect("open");
        let (rows, check) = consume(&mut ds);
        let t = secs(start.elapsed());
        black_box(check);
        assert_eq!(rows, ROWS);
        rates.push(t);
    }
    let best = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let med = median(rates);
    let mb = bytes as f64 / 1e6;
    println!(
        "csv first pass: {:.0} MB file, best {:.3} s = {:.2} M rows/s, {:.0} MB/s; \
         median {:.3} s = {:.2} M rows/s, {:.0} MB/s",
        mb,
        best,
        ROWS as f64 / best / 1e6,
        mb / best,
        med,
        ROWS as f64 / med / 1e6,
        mb / med
    );
}

fn bench_csv_gz(plain: &Path, dir: &Path) {
    let gz_path = dir.join("bench.csv.gz");
    {
        let data = std::fs::read(plain).expect("read");
        let f = std::fs::File::create(&gz_path).expect("create");
        let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        gz.write_all(&data).expect("write gz");
        gz.finish().expect("finish gz");
    }
    let start = Instant::now();
    let mut ds = CsvDataset::open(&gz_path, schema()).expect("open");
    let (rows, check) = consume(&mut ds);
    let t = secs(start.elapsed());
    black_box(check);
    assert_eq!(rows, ROWS);
    let raw = std::fs::metadata(plain).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    println!(
        "csv.gz first pass: {:.3} s = {:.2} M rows/s, {:.0} MB/s of uncompressed CSV",
        t,
        ROWS as f64 / t / 1e6,
        raw / t
    );
}

fn bench_cached_epochs(path: &Path) {
    let mut cached = CsvDataset::open(path, schema()).expect("open").cache();
    let fill = Instant::now();
    let (rows, _) = consume(&mut cached);
    assert_eq!(rows, ROWS);
    println!(
        "cache fill (first pass into memory): {:.3} s",
        secs(fill.elapsed())
    );
    let epochs = 5;
    let shuffled = |mut cached: datasets::combinators::Cache<CsvDataset>| {
        cached
            .restore(&Position::Cache { index: 0 })
            .expect("rewind");
        cached
            .shuffle(10_000, 42)
            .repeat(Some(epochs))
            .batch(128, false)
    };
    let run = |pipeline: &mut dyn Dataset<Item = Vec<Example>>| {
        let start = Instant::now();
        let mut per_epoch = Vec::new();
        let mut epoch_start = Instant::now();
        let mut rows = 0usize;
        let mut check = 0.0f32;
        while let Some(batch) = pipeline.next_item() {
            let batch = batch.expect("valid");
            check += batch[0].dense[1];
            rows += batch.len();
            if rows / ROWS > per_epoch.len() {
                per_epoch.push(secs(epoch_start.elapsed()));
                epoch_start = Instant::now();
            }
        }
        black_box(check);
        assert_eq!(rows, ROWS * epochs);
        let total = secs(start.elapsed());
        let best = per_epoch.iter().copied().fold(f64::INFINITY, f64::min);
        (total, best)
    };
    let mut plain = shuffled(cached);
    let (total, best) = run(&mut plain);
    drop(plain);
    println!(
        "cached epoch, shuffle(10000) + batch(128), no prefetch: {epochs} epochs in {total:.3} s \
         = {:.2} M rows/s overall; best epoch {best:.3} s = {:.2} M rows/s",
        (ROWS * epochs) as f64 / total / 1e6,
        ROWS as f64 / best / 1e6
    );
    // A fresh cache, now read through a prefetch thread.
    let mut cached = CsvDataset::open(path, schema()).expect("open").cache();
    consume(&mut cached);
    let mut prefetched = shuffled(cached).prefetch(4);
    let (total, best) = run(&mut prefetched);
    println!(
        "cached epoch, shuffle(10000) + batch(128) + prefetch(4): {epochs} epochs in {total:.3} s \
         = {:.2} M rows/s overall; best epoch {best:.3} s = {:.2} M rows/s",
        (ROWS * epochs) as f64 / total / 1e6,
        ROWS as f64 / best / 1e6
    );
}

fn bench_mnist() {
    let Some(files) = bundled::find_mnist_in(estimator_cluster::mnist_dirs_from_env()) else {
        println!(
            "mnist: IDX files not found (set MNIST_DIR or see datasets/data/README.md); skipped"
        );
        return;
    };
    let start = Instant::now();
    let mut ds = IdxDataset::mnist(&files.train_images, &files.train_labels).expect("open mnist");
    let load = secs(start.elapsed());
    let n = ds.len();
    let start = Instant::now();
    let (rows, check) = consume(&mut ds);
    let iterate = secs(start.elapsed());
    black_box(check);
    assert_eq!(rows, n);
    let ds = IdxDataset::mnist(&files.train_images, &files.train_labels).expect("open mnist");
    let mut pipeline = ds.shuffle(10_000, 1).batch(128, false).prefetch(4);
    let start = Instant::now();
    let mut rows = 0;
    while let Some(b) = pipeline.next_item() {
        rows += b.expect("valid").len();
    }
    let piped = secs(start.elapsed());
    println!(
        "mnist train ({n} images): open + gunzip + validate {:.3} s; iterate as Examples \
         {:.3} s = {:.2} M rows/s; shuffle(10000) + batch(128) + prefetch(4) {:.3} s = \
         {:.2} M rows/s",
        load,
        iterate,
        n as f64 / iterate / 1e6,
        piped,
        rows as f64 / piped / 1e6
    );
}

fn bench_pandas(path: &Path, bytes: u64) {
    let candidates: Vec<String> = std::env::var("BENCH_PYTHON")
        .ok()
        .into_iter()
        .chain([
            "/tmp/venv-bench/bin/python".to_string(),
            "python3".to_string(),
        ])
        .collect();
    let script = r#"
import sys, time
import pandas as pd
path = sys.argv[1]
times = []
for _ in range(3):
    t = time.perf_counter()
    df = pd.read_csv(path, dtype={f"f{i}": "float32" for i in range(64)})
    times.append(time.perf_counter() - t)
    assert len(df) == 200000
print(min(times), sorted(times)[1], pd.__version__)
"#;
    for python in candidates {
        let out = Command::new(&python)
            .arg("-c")
            .arg(script)
            .arg(path)
            .output();
        let Ok(out) = out else { continue };
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let parts: Vec<&str> = text.split_whitespace().collect();
        if let [best, med, version] = parts[..] {
            let best: f64 = best.parse().unwrap_or(f64::NAN);
            let med: f64 = med.parse().unwrap_or(f64::NAN);
            let mb = bytes as f64 / 1e6;
            println!(
                "pandas {version} read_csv (C engine, float32 dtypes, {python}): best {best:.3} s \
                 = {:.2} M rows/s, {:.0} MB/s; median {med:.3} s = {:.0} MB/s",
                ROWS as f64 / best / 1e6,
                mb / best,
                mb / med
            );
            return;
        }
    }
    println!("pandas: no Python with pandas found (set BENCH_PYTHON); skipped");
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument picks cases by name.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wanted("map_parallel") {
        map_parallel::bench();
    }
    if wanted("columnar") {
        columnar::bench();
    }
    if wanted("mnist") {
        bench_mnist();
    }
    if wanted("tfrecord") {
        tfrecord::bench();
    }
    if wanted("parquet") {
        parquet::bench();
    }
    if !wanted("csv") && !wanted("pandas") && !wanted("csv_threads") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.csv");
    let start = Instant::now();
    let bytes = write_csv(&path).expect("write bench csv");
    println!(
        "generated {ROWS} rows x {COLS} float columns + label: {:.1} MB in {:.1} s",
        bytes as f64 / 1e6,
        secs(start.elapsed())
    );
    if wanted("csv") {
        bench_csv_parse(&path, bytes);
        bench_csv_gz(&path, dir.path());
        bench_cached_epochs(&path);
    }
    if wanted("csv_threads") {
        csv_threads::bench(&path, bytes);
    }
    if wanted("pandas") {
        bench_pandas(&path, bytes);
    }
}
