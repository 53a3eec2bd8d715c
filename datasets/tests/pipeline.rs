//! End-to-end pipelines: resume from a saved position, real data files.

use std::path::{Path, PathBuf};

use datasets::{
    bundled, BadRowPolicy, CsvDataset, CsvOptions, Dataset, DatasetExt, Example, IdxDataset, Label,
    Position, Schema,
};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .category("colour")
        .float("y")
        .with_default("0")
        .int("label")
        .label("label")
}

/// 101 rows; row `i` has `x = i`, so examples are easy to tell apart.
fn write_csv(dir: &Path, name: &str) -> PathBuf {
    let mut text = String::from("x,colour,y,label\n");
    for i in 0..101 {
        let y = if i % 10 == 3 {
            String::new()
        } else {
            format!("{}.25", i * 3)
        };
        text.push_str(&format!("{i},c{},{y},{}\n", i % 4, i % 3));
    }
    let path = dir.join(name);
    if name.ends_with(".gz") {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(text.as_bytes()).unwrap();
        gz.finish().unwrap();
    } else {
        std::fs::write(&path, text).unwrap();
    }
    path
}

fn drain<D: Dataset>(ds: &mut D) -> Vec<D::Item> {
    ds.iter().map(|r| r.unwrap()).collect()
}

/// Consumes `k` items, round-trips the position through JSON, restores it into a fresh
/// pipeline from `build` and checks the rest matches the uninterrupted run.
fn check_resume<D, F>(build: F, ks: &[usize]) -> usize
where
    D: Dataset,
    D::Item: PartialEq + std::fmt::Debug,
    F: Fn() -> D,
{
    let full = drain(&mut build());
    for &k in ks {
        let k = k.min(full.len());
        let mut ds = build();
        for _ in 0..k {
            ds.next_item().unwrap().unwrap();
        }
        let json = serde_json::to_string(&ds.position()).unwrap();
        drop(ds);
        let position: Position = serde_json::from_str(&json).unwrap();
        let mut resumed = build();
        resumed.restore(&position).unwrap();
        assert_eq!(drain(&mut resumed), full[k..], "resumed after {k} items");
    }
    full.len()
}

#[test]
fn resume_csv_shuffle_shard_batch_prefetch() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["data.csv", "data.csv.gz"] {
        let path = write_csv(dir.path(), name);
        for index in 0..3 {
            let build = || {
                CsvDataset::open(&path, schema())
                    .unwrap()
                    .shuffle(16, 1234)
                    .shard(3, index)
                    .batch(5, false)
                    .prefetch(4)
            };
            let batches = check_resume(build, &[0, 1, 2, 3, 6, 7, 100]);
            // 101 rows in 3 shards of 34/34/33 examples, batches of 5.
            assert_eq!(batches, 7);
        }
        // The shards partition the file.
        let mut xs: Vec<f32> = (0..3)
            .flat_map(|i| {
                drain(
                    &mut CsvDataset::open(&path, schema())
                        .unwrap()
                        .shuffle(16, 1234)
                        .shard(3, i),
                )
            })
            .map(|e: Example| e.dense[0])
            .collect();
        xs.sort_by(f32::total_cmp);
        assert_eq!(xs, (0..101).map(|i| i as f32).collect::<Vec<_>>());
    }
}

#[test]
fn resume_across_epoch_boundaries_with_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_csv(dir.path(), "data.csv");
    let build = || {
        CsvDataset::open(&path, schema())
            .unwrap()
            .shuffle(32, 7)
            .repeat(Some(3))
            .shard(2, 1)
            .batch(7, false)
            .prefetch(2)
    };
    // 303 examples, 151 in shard 1, 22 batches; batch 7 spans epochs 0 and 1.
    let n = check_resume(build, &[0, 5, 7, 8, 14, 15, 21, 22]);
    assert_eq!(n, 22);

    // Every epoch has the same multiset of rows, in a different order.
    let mut ds = CsvDataset::open(&path, schema())
        .unwrap()
        .shuffle(32, 7)
        .repeat(Some(3));
    let xs: Vec<f32> = drain(&mut ds).iter().map(|e| e.dense[0]).collect();
    let epochs: Vec<&[f32]> = xs.chunks(101).collect();
    assert_eq!(epochs.len(), 3);
    assert_ne!(epochs[0], epochs[1]);
    assert_ne!(epochs[1], epochs[2]);
    for e in &epochs {
        let mut sorted = e.to_vec();
        sorted.sort_by(f32::total_cmp);
        assert_eq!(sorted, (0..101).map(|i| i as f32).collect::<Vec<_>>());
    }
}

#[test]
fn resume_cached_pipeline_forever() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_csv(dir.path(), "data.csv.gz");
    let build = || {
        CsvDataset::open(&path, schema())
            .unwrap()
            .cache()
            .shuffle(101, 3)
            .repeat(None)
            .batch(10, true)
            .take(35)
            .prefetch(3)
    };
    assert_eq!(check_resume(build, &[0, 4, 10, 11, 30, 35]), 35);
}

#[test]
fn resume_with_skipped_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    let mut text = String::from("x,colour,y,label\n");
    for i in 0..40 {
        match i % 7 {
            2 => text.push_str(&format!("{i},c,oops,1\n")),
            5 => text.push_str(&format!("{i},c\n")),
            _ => text.push_str(&format!("{i},c,1,1\n")),
        }
    }
    std::fs::write(&path, text).unwrap();
    let open = || {
        let options = CsvOptions {
            bad_rows: BadRowPolicy::Skip,
            ..CsvOptions::default()
        };
        CsvDataset::open_with(&path, schema(), options).unwrap()
    };
    let n = check_resume(|| open().shuffle(8, 1).batch(3, false), &[0, 2, 5, 100]);
    assert_eq!(n, 10); // 40 rows - 11 bad = 29 examples
    let mut ds = open();
    let counter = ds.skipped_counter();
    for _ in 0..10 {
        ds.next_item();
    }
    let position = ds.position();
    let mut resumed = open();
    let resumed_counter = resumed.skipped_counter();
    resumed.restore(&position).unwrap();
    assert_eq!(resumed_counter.get(), counter.get());
    drain(&mut resumed);
    assert_eq!(resumed_counter.get(), 11);
}

#[test]
fn iris_pipeline_epoch_sizes() {
    let mut ds = CsvDataset::open(bundled::iris_train_path(), bundled::iris_schema())
        .unwrap()
        .shuffle(120, 0)
        .repeat(Some(2))
        .batch(32, false);
    let sizes: Vec<usize> = drain(&mut ds).iter().map(Vec::len).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 240);
    assert_eq!(sizes.len(), 8);
}

#[test]
fn mnist_test_set_if_present() {
    let Some(files) = bundled::find_mnist_in(estimator_cluster::mnist_dirs_from_env()) else {
        eprintln!("MNIST files not found (set MNIST_DIR); skipping");
        return;
    };
    let mut ds = IdxDataset::mnist(&files.test_images, &files.test_labels).unwrap();
    assert_eq!(ds.len(), 10_000);
    let first = ds.next_item().unwrap().unwrap();
    assert_eq!(first.dense.len(), 784);
    assert_eq!(first.label, Label::Class(7));
    assert!(first.dense.iter().all(|&p| (0.0..=1.0).contains(&p)));
    let mut counts = [0usize; 10];
    ds.restore(&Position::Index(0)).unwrap();
    for ex in ds.iter() {
        counts[ex.unwrap().label.class().unwrap() as usize] += 1;
    }
    assert_eq!(counts.iter().sum::<usize>(), 10_000);
    assert!(counts.iter().all(|&c| c > 800));
}
