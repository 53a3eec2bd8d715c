//! Columnar pipelines end to end: `cache_table` + `batch_columnar` resume step-exact,
//! from CSV and from memory, through shuffle, repeat, shard and prefetch.

use std::path::{Path, PathBuf};

use datasets::{
    from_vec, ColumnarBatch, CsvDataset, Dataset, DatasetExt, Example, Label, Position, Schema,
};

fn schema() -> Schema {
    Schema::new()
        .float("x")
        .category("colour")
        .float("y")
        .int("label")
        .label("label")
}

fn write_csv(dir: &Path) -> PathBuf {
    let mut text = String::from("x,colour,y,label\n");
    for i in 0..203 {
        text.push_str(&format!("{i},c{},{}.125,{}\n", i % 5, i * 3, i % 4));
    }
    let path = dir.join("rows.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn bits(batch: &ColumnarBatch) -> Vec<u32> {
    batch.dense.iter().map(|v| v.to_bits()).collect()
}

/// Takes `k` batches, saves the position as JSON, restores it into a fresh pipeline and
/// checks that the next `n` batches are the same, bit for bit.
fn check_resume<D, F>(build: F, ks: &[usize], n: usize)
where
    D: Dataset<Item = ColumnarBatch>,
    F: Fn() -> D,
{
    let mut reference = build();
    let total = ks.iter().max().unwrap() + n;
    let full: Vec<ColumnarBatch> = (0..total)
        .map(|_| reference.next_item().unwrap().unwrap())
        .collect();
    for &k in ks {
        let mut ds = build();
        for _ in 0..k {
            ds.next_item().unwrap().unwrap();
        }
        let saved = serde_json::to_string(&ds.position()).unwrap();
        drop(ds);
        let mut fresh = build();
        fresh
            .restore(&serde_json::from_str::<Position>(&saved).unwrap())
            .unwrap();
        for (i, want) in full[k..k + n].iter().enumerate() {
            let got = fresh.next_item().unwrap().unwrap();
            assert_eq!(bits(&got), bits(want), "k = {k}, batch {i}");
            assert_eq!(&got, want, "k = {k}, batch {i}");
        }
    }
}

#[test]
fn csv_cache_table_shuffle_repeat_batch_columnar_prefetch_resumes_step_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_csv(dir.path());
    let build = || {
        CsvDataset::open(&path, schema())
            .unwrap()
            .cache_table()
            .shuffle(64, 11)
            .repeat(None)
            .batch_columnar(16, false)
            .prefetch(4)
    };
    // 203 rows = 12.7 batches an epoch: positions in the first pass, across epoch
    // boundaries, and in later epochs, where the rows come from the table.
    check_resume(build, &[0, 1, 7, 12, 13, 25, 38, 51], 20);
}

#[test]
fn memory_cache_table_shard_take_resumes_and_matches_the_example_path() {
    let rows: Vec<Example> = (0..300)
        .map(|i| Example {
            dense: (0..5).map(|j| (i * 5 + j) as f32 / 7.0).collect(),
            categorical: vec![format!("{}", i % 9)],
            label: Label::Float(i as f32 * 0.1),
        })
        .collect();
    let columnar = || {
        from_vec(rows.clone())
            .cache_table()
            .shuffle(100, 5)
            .repeat(Some(4))
            .shard(2, 1)
            .take(500)
            .batch_columnar(32, true)
            .prefetch(2)
    };
    check_resume(columnar, &[0, 3, 5, 9, 14], 1);
    let want: Vec<ColumnarBatch> = from_vec(rows.clone())
        .cache()
        .shuffle(100, 5)
        .repeat(Some(4))
        .shard(2, 1)
        .take(500)
        .batch(32, true)
        .iter()
        .map(|b| ColumnarBatch::from_examples(&b.unwrap()).unwrap())
        .collect();
    let got: Vec<ColumnarBatch> = columnar().iter().map(Result::unwrap).collect();
    assert_eq!(got.len(), 500 / 32);
    assert_eq!(got, want);
}
