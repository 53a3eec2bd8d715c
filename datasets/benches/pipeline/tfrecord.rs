//! The `tfrecord` case: a TFRecord file of 20,000 MNIST-width tf.Examples (784 float32
//! pixels + an int64 label, 3.2 KB a record, 63 MB, in the page cache) decoded into
//! `ColumnarBatch`es of 128, five passes per measurement: rows through `batch_columnar`;
//! `into_batches` on the caller's thread; `into_batches` with `with_parse_threads(Fixed(1))`
//! (two threads in all: the caller reads, the worker decodes, and the caller decodes too
//! while it waits) and `Fixed(2)`; and, for scale, the records decoded by prost into
//! `tf.Example` messages (what a reader built on the generated types alone would do) before
//! `batch_columnar`. Rounds alternate the order; medians. A GZIP copy is read once with one
//! worker.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use datasets::tf_proto::{feature, Example as TfExample, Feature, Features, FloatList, Int64List};
use datasets::{
    BoxDataset, ColumnarBatch, DatasetExt, Example, FeatureSpec, Label, Labels, ParallelCalls,
    SplitMix64, TfExampleDataset, TfRecordCompression, TfRecordDataset, TfRecordWriter,
};

use super::{median, secs};

const ROWS: usize = 20_000;
const PASSES: usize = 5;
const ROUNDS: usize = 5;
const BATCH: usize = 128;

fn spec() -> FeatureSpec {
    FeatureSpec::from_json(
        r#"{"features": {"image": {"kind": "fixed", "shape": [784], "dtype": "float32"},
                         "label": {"kind": "fixed", "shape": [], "dtype": "int64"}},
            "label": "label"}"#,
    )
    .expect("spec")
}

fn write(path: &Path, compression: TfRecordCompression) -> u64 {
    let mut rng = SplitMix64::new(784);
    let mut writer = TfRecordWriter::create(path, compression).expect("create");
    for _ in 0..ROWS {
        // Pixels as MNIST's, k/255, most of them 0.
        let pixels: Vec<f32> = (0..784)
            .map(|_| match rng.below(5) {
                0 => rng.below(256) as f32 / 255.0,
                _ => 0.0,
            })
            .collect();
        let image = Feature {
            kind: Some(feature::Kind::FloatList(FloatList { value: pixels })),
        };
        let label = Feature {
            kind: Some(feature::Kind::Int64List(Int64List {
                value: vec![rng.below(10) as i64],
            })),
        };
        let features = [("image".to_string(), image), ("label".to_string(), label)];
        let example = TfExample {
            features: Some(Features {
                feature: features.into_iter().collect(),
            }),
        };
        writer.write_example(&example).expect("write");
    }
    writer.finish().expect("finish");
    std::fs::metadata(path).expect("size").len()
}

/// The pipelines compared, each yielding columnar batches of the whole file.
#[derive(Clone, Copy, Debug)]
enum Way {
    Rows,
    Serial,
    Threads(usize),
    Prost,
}

fn pipeline(path: &Path, way: Way) -> BoxDataset<ColumnarBatch> {
    let spec = spec();
    let rows = || TfExampleDataset::open([path], &spec).expect("open");
    match way {
        Way::Rows => rows().batch_columnar(BATCH, false).boxed(),
        Way::Serial => rows().into_batches(BATCH, false).boxed(),
        Way::Threads(n) => rows()
            .into_batches(BATCH, false)
            .with_parse_threads(ParallelCalls::Fixed(n))
            .boxed(),
        Way::Prost => TfRecordDataset::open([path])
            .expect("open")
            .map(|record| {
                let message =
                    <TfExample as prost::Message>::decode(record.as_slice()).expect("a tf.Example");
                let mut features = message.features.expect("features").feature;
                let Some(feature::Kind::FloatList(image)) =
                    features.remove("image").and_then(|f| f.kind)
                else {
                    panic!("image")
                };
                let Some(feature::Kind::Int64List(label)) =
                    features.remove("label").and_then(|f| f.kind)
                else {
                    panic!("label")
                };
                Example {
                    dense: image.value,
                    label: Label::Class(label.value[0] as u32),
                    ..Example::default()
                }
            })
            .batch_columnar(BATCH, false)
            .boxed(),
    }
}

/// Rows per second over `PASSES` passes, taking from each batch what a model's input step
/// does: the contiguous pixels and the labels.
fn time(path: &Path, way: Way, passes: usize) -> f64 {
    let start = Instant::now();
    let mut rows = 0;
    let mut check = 0.0f32;
    for _ in 0..passes {
        let mut batches = pipeline(path, way);
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
    assert_eq!(rows, ROWS * passes);
    rows as f64 / secs(start.elapsed())
}

pub fn bench() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mnist.tfrecord");
    let start = Instant::now();
    let bytes = write(&path, TfRecordCompression::None);
    println!(
        "tfrecord: wrote {ROWS} MNIST-width tf.Examples, {:.1} MB, in {:.1} s",
        bytes as f64 / 1e6,
        secs(start.elapsed())
    );
    let ways = [
        Way::Threads(1),
        Way::Threads(2),
        Way::Serial,
        Way::Rows,
        Way::Prost,
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); ways.len()];
    for round in 0..ROUNDS {
        let mut order: Vec<usize> = (0..ways.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut line = format!("tfrecord round {}:", round + 1);
        for i in order {
            let rate = time(&path, ways[i], PASSES);
            rates[i].push(rate);
            line.push_str(&format!(" {:?} {:.2} M rows/s;", ways[i], rate / 1e6));
        }
        println!("{line}");
    }
    let mb_per_row = bytes as f64 / 1e6 / ROWS as f64;
    for (way, rates) in ways.iter().zip(rates) {
        let rate = median(rates);
        println!(
            "tfrecord -> ColumnarBatch({BATCH}), {:?}: median {:.2} M rows/s ({:.0} MB/s of records)",
            way,
            rate / 1e6,
            rate * mb_per_row
        );
    }
    let gz = dir.path().join("mnist.tfrecord.gz");
    let packed = write(&gz, TfRecordCompression::Gzip);
    let rate = time(&gz, Way::Threads(1), 1);
    println!(
        "tfrecord GZIP ({:.1} MB), Threads(1): {:.2} M rows/s (one pass)",
        packed as f64 / 1e6,
        rate / 1e6
    );
}
