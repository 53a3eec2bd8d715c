use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::{
    from_fn, from_vec, ColumnarBatch, Dataset, DatasetExt, Error, Example, Label, LabelRef,
    Position, TableRow,
};

fn row(i: usize) -> Example {
    Example {
        dense: vec![i as f32, i as f32 * 0.5],
        categorical: vec![format!("k{}", i % 4), format!("{i}")],
        label: Label::Name(format!("n{}", i % 3)),
    }
}

fn rows(n: usize) -> Vec<Example> {
    (0..n).map(row).collect()
}

fn examples<D: Dataset<Item = TableRow>>(ds: &mut D) -> Vec<Example> {
    ds.iter().map(|r| r.unwrap().to_example()).collect()
}

#[test]
fn later_passes_share_the_table_and_do_not_read_upstream() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let source = from_fn(move |i| {
        c.fetch_add(1, Ordering::Relaxed);
        (i < 5).then(|| row(i))
    });
    let mut ds = source.cache_table();
    assert_eq!(examples(&mut ds), rows(5));
    assert!(ds.is_complete());
    assert_eq!(ds.cached_len(), 5);
    assert_eq!(ds.len_hint(), Some(5));
    assert_eq!(
        ds.table().dense,
        [0.0, 0.0, 1.0, 0.5, 2.0, 1.0, 3.0, 1.5, 4.0, 2.0]
    );
    assert_eq!(ds.table().categorical[0].get(4), "k0");
    let after_first = calls.load(Ordering::Relaxed);
    ds.restore(&Position::Cache { index: 0 }).unwrap();
    let a = ds.next_item().unwrap().unwrap();
    let b = ds.next_item().unwrap().unwrap();
    assert_eq!(a.dense(), [0.0, 0.0]);
    assert_eq!((b.categorical(0), b.categorical(1)), ("k1", "1"));
    assert_eq!(b.label(), LabelRef::Name("n1"));
    assert_eq!(b.categorical(9), "");
    // Shared rows point into the table: their values live in its buffer.
    assert!(std::ptr::eq(a.dense().as_ptr(), ds.table().dense.as_ptr()));
    assert_eq!(a, TableRow::owned(row(0)));
    assert_ne!(a, b);
    let mut repeated = ds.repeat(Some(2));
    // `repeat` restarts each pass where it was built: at index 2.
    assert_eq!(examples(&mut repeated).len(), 3 + 3);
    assert_eq!(calls.load(Ordering::Relaxed), after_first);
}

#[test]
fn same_values_as_cache_through_shuffle_and_repeat() {
    let want: Vec<Example> = from_vec(rows(50))
        .cache()
        .shuffle(16, 3)
        .repeat(Some(3))
        .iter()
        .map(Result::unwrap)
        .collect();
    let got = examples(
        &mut from_vec(rows(50))
            .cache_table()
            .shuffle(16, 3)
            .repeat(Some(3)),
    );
    assert_eq!(got, want);
}

#[test]
fn restore_into_a_fresh_table_and_rewind_during_the_first_pass() {
    let mut ds = from_vec(rows(6)).cache_table();
    ds.next_item();
    ds.next_item();
    let pos = ds.position();
    assert_eq!(pos, Position::Cache { index: 2 });
    let mut fresh = from_vec(rows(6)).cache_table();
    fresh.restore(&pos).unwrap();
    assert_eq!(fresh.cached_len(), 2);
    assert_eq!(fresh.next_item().unwrap().unwrap().to_example(), row(2));
    // Back to 1 before the table is complete: rows come from the table, then upstream.
    fresh.restore(&Position::Cache { index: 1 }).unwrap();
    assert_eq!(examples(&mut fresh), rows(6)[1..].to_vec());
    assert!(fresh.is_complete());
    assert!(fresh.restore(&Position::Cache { index: 7 }).is_err());
    assert!(fresh.restore(&Position::Index(0)).is_err());
    let mut empty = from_vec(Vec::<Example>::new()).cache_table();
    assert!(empty.next_item().is_none());
    assert_eq!(empty.table().rows, 0);
}

#[test]
fn errors_and_misfit_rows_are_passed_on_not_cached() {
    let make = || {
        from_vec((0..8).collect::<Vec<usize>>()).try_map(|i| match i {
            3 => Err(Error::Custom("bad three".into())),
            5 => Ok(Example {
                dense: vec![1.0],
                ..row(5)
            }),
            _ => Ok(row(i)),
        })
    };
    let mut ds = make().cache_table();
    let out: Vec<Result<Example, String>> = ds
        .iter()
        .map(|r| r.map(|r| r.to_example()).map_err(|e| e.to_string()))
        .collect();
    assert_eq!(out.len(), 8);
    assert_eq!(out[3], Err("bad three".to_string()));
    assert_eq!(
        out[5],
        Err("cache_table: row 4: 1 dense values, not as in row 0".to_string())
    );
    assert_eq!(ds.cached_len(), 6);
    // Index 5 is the sixth good row (row 7): errors take no index, on restore too.
    let mut fresh = make().cache_table();
    fresh.restore(&Position::Cache { index: 5 }).unwrap();
    assert_eq!(examples(&mut fresh), vec![row(7)]);
}

#[test]
fn batches_equal_those_of_batch_over_cache() {
    let old: Vec<ColumnarBatch> = from_vec(rows(37))
        .cache()
        .shuffle(10, 9)
        .repeat(Some(2))
        .batch(8, false)
        .iter()
        .map(|b| ColumnarBatch::from_examples(&b.unwrap()).unwrap())
        .collect();
    let new: Vec<ColumnarBatch> = from_vec(rows(37))
        .cache_table()
        .shuffle(10, 9)
        .repeat(Some(2))
        .batch_columnar(8, false)
        .iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(new.len(), 10);
    assert_eq!(new, old);
}

#[test]
fn a_table_filled_elsewhere_is_read_without_the_upstream_and_resumes_into_one_that_reads_it() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = |calls: Arc<AtomicUsize>| {
        from_fn(move |i| {
            calls.fetch_add(1, Ordering::Relaxed);
            (i < 7).then(|| row(i))
        })
    };
    let mut table = ColumnarBatch::default();
    for example in rows(7) {
        table.push(&example).unwrap();
    }
    let mut filled = counted(calls.clone())
        .cache_table()
        .with_table(Arc::new(table));
    assert!(filled.is_complete());
    assert_eq!(filled.len_hint(), Some(7));
    let first: Vec<Example> = (0..3)
        .map(|_| filled.next_item().unwrap().unwrap().to_example())
        .collect();
    assert_eq!(first, rows(3));
    let position = filled.position();
    assert_eq!(examples(&mut filled), rows(7)[3..]);
    assert_eq!(calls.load(Ordering::Relaxed), 0, "the upstream was read");
    // The same position in a cache that reads its upstream: the same rows follow.
    let mut reading = counted(calls.clone()).cache_table();
    reading.restore(&position).unwrap();
    assert_eq!(examples(&mut reading), rows(7)[3..]);
    // And back: a position of the reading cache restores into a filled one.
    reading.restore(&Position::Cache { index: 5 }).unwrap();
    let position = reading.position();
    let mut refilled = from_vec(Vec::<Example>::new())
        .cache_table()
        .with_table(Arc::new(reading.table().clone()));
    refilled.restore(&position).unwrap();
    assert_eq!(examples(&mut refilled), rows(7)[5..]);
    assert!(refilled
        .restore(&Position::Cache { index: 8 })
        .unwrap_err()
        .to_string()
        .contains("past the end"));
}
