//! The `parquet` case: 20,000 MNIST-width rows (784 float32 pixel columns + an int64 label)
//! written once as a Parquet file (snappy, dictionary pages where they pay, row groups of
//! 5,000 rows, as `parquet`'s `ArrowWriter` writes them) and once as CSV, then read uncached
//! (each pass opens the file: no `cache`, no `cache_table`; the files sit in the page cache)
//! into `ColumnarBatch`es of 128, three passes per measurement: Parquet straight from the
//! columns (`into_batches`), Parquet rows through `batch_columnar`, CSV through
//! `batch_columnar` on the caller's thread and with `with_parse_threads(Fixed(2))`. Rounds
//! alternate the order (A B C D, D C B A, …); medians.

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch};
use datasets::{
    BoxDataset, ColumnarBatch, CsvDataset, DatasetExt, Labels, ParallelCalls, ParquetDataset,
    Schema, SplitMix64,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{median, secs};

const ROWS: usize = 20_000;
const PIXELS: usize = 784;
const PASSES: usize = 3;
const ROUNDS: usize = 5;
const BATCH: usize = 128;

fn schema() -> Schema {
    (0..PIXELS)
        .fold(Schema::new(), |s, p| s.float(format!("p{p}")))
        .int("label")
        .label("label")
}

/// Pixels as MNIST's, k/255, most of them 0; labels 0..9.
fn rows() -> (Vec<Vec<f32>>, Vec<i64>) {
    let mut rng = SplitMix64::new(784);
    let mut pixels: Vec<Vec<f32>> = (0..PIXELS).map(|_| Vec::with_capacity(ROWS)).collect();
    let mut labels = Vec::with_capacity(ROWS);
    for _ in 0..ROWS {
        for column in &mut pixels {
            column.push(match rng.below(5) {
                0 => rng.below(256) as f32 / 255.0,
                _ => 0.0,
            });
        }
        labels.push(rng.below(10) as i64);
    }
    (pixels, labels)
}

fn write_parquet(path: &Path, pixels: &[Vec<f32>], labels: &[i64]) -> u64 {
    let mut columns: Vec<(String, ArrayRef)> = (pixels.iter().enumerate())
        .map(|(p, values)| {
            let array: ArrayRef = Arc::new(Float32Array::from(values.clone()));
            (format!("p{p}"), array)
        })
        .collect();
    columns.push(("label".into(), Arc::new(Int64Array::from(labels.to_vec()))));
    let batch = RecordBatch::try_from_iter(columns).expect("columns");
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(5_000))
        .build();
    let file = std::fs::File::create(path).expect("create");
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).expect("writer");
    writer.write(&batch).expect("write");
    writer.close().expect("close");
    std::fs::metadata(path).expect("size").len()
}

fn write_csv(path: &Path, pixels: &[Vec<f32>], labels: &[i64]) -> u64 {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("create"));
    let header: Vec<String> = (0..PIXELS).map(|p| format!("p{p}")).collect();
    writeln!(out, "{},label", header.join(",")).expect("write");
    for (row, label) in labels.iter().enumerate() {
        for column in pixels {
            write!(out, "{},", column[row]).expect("write");
        }
        writeln!(out, "{label}").expect("write");
    }
    out.flush().expect("flush");
    std::fs::metadata(path).expect("size").len()
}

#[derive(Clone, Copy, Debug)]
enum Way {
    /// The `parquet` crate's own reader alone: Arrow record batches of 1024 rows, for the
    /// floor under the others.
    ArrowOnly,
    ParquetColumns,
    ParquetRows,
    Csv,
    CsvThreads(usize),
}

fn pipeline(parquet: &Path, csv: &Path, way: Way) -> BoxDataset<ColumnarBatch> {
    match way {
        Way::ArrowOnly => unreachable!("timed by arrow_only"),
        Way::ParquetColumns => ParquetDataset::open(parquet, schema())
            .expect("open")
            .into_batches(BATCH, false)
            .boxed(),
        Way::ParquetRows => ParquetDataset::open(parquet, schema())
            .expect("open")
            .batch_columnar(BATCH, false)
            .boxed(),
        Way::Csv => CsvDataset::open(csv, schema())
            .expect("open")
            .batch_columnar(BATCH, false)
            .boxed(),
        Way::CsvThreads(n) => CsvDataset::open(csv, schema())
            .expect("open")
            .with_parse_threads(ParallelCalls::Fixed(n))
            .batch_columnar(BATCH, false)
            .boxed(),
    }
}

/// Rows per second of the `parquet` crate's reader alone over `PASSES` passes.
fn arrow_only(parquet: &Path) -> f64 {
    let start = Instant::now();
    let mut rows = 0;
    let mut check = 0.0f32;
    for _ in 0..PASSES {
        let file = std::fs::File::open(parquet).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("footer")
            .with_batch_size(1024)
            .build()
            .expect("reader");
        for batch in reader {
            let batch = batch.expect("bench data is valid");
            let last = batch.column(PIXELS - 1).as_primitive::<Float32Type>();
            check += last.value(0);
            rows += batch.num_rows();
        }
    }
    black_box(check);
    assert_eq!(rows, ROWS * PASSES);
    rows as f64 / secs(start.elapsed())
}

/// Rows per second over `PASSES` passes, each opening the file anew.
fn time(parquet: &Path, csv: &Path, way: Way) -> f64 {
    if let Way::ArrowOnly = way {
        return arrow_only(parquet);
    }
    let start = Instant::now();
    let mut rows = 0;
    let mut check = 0.0f32;
    for _ in 0..PASSES {
        let mut batches = pipeline(parquet, csv, way);
        while let Some(batch) = batches.next_item() {
            let batch = batch.expect("bench data is valid");
            let Labels::Class(labels) = &batch.labels else {
                panic!("class labels")
            };
            check += batch.dense[batch.dense.len() - 1] + labels[0] as f32;
            rows += batch.rows;
        }
    }
    black_box(check);
    assert_eq!(rows, ROWS * PASSES);
    rows as f64 / secs(start.elapsed())
}

pub fn bench() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (parquet, csv) = (
        dir.path().join("mnist.parquet"),
        dir.path().join("mnist.csv"),
    );
    let start = Instant::now();
    let (pixels, labels) = rows();
    let parquet_bytes = write_parquet(&parquet, &pixels, &labels);
    let csv_bytes = write_csv(&csv, &pixels, &labels);
    println!(
        "parquet: wrote {ROWS} MNIST-width rows as Parquet ({:.1} MB) and CSV ({:.1} MB) in \
         {:.1} s",
        parquet_bytes as f64 / 1e6,
        csv_bytes as f64 / 1e6,
        secs(start.elapsed())
    );
    let ways = [
        Way::ArrowOnly,
        Way::ParquetColumns,
        Way::Csv,
        Way::ParquetRows,
        Way::CsvThreads(2),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for round in 0..ROUNDS {
        let mut order: Vec<usize> = (0..ways.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut line = format!("parquet round {}:", round + 1);
        for i in order {
            let rate = time(&parquet, &csv, ways[i]);
            rates[i].push(rate);
            line.push_str(&format!(" {:?} {:.0} k rows/s;", ways[i], rate / 1e3));
        }
        println!("{line}");
    }
    for (way, rates) in ways.iter().zip(rates) {
        println!(
            "uncached -> ColumnarBatch({BATCH}), {way:?}: median {:.0} k rows/s",
            median(rates) / 1e3
        );
    }
}
