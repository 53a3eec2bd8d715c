//! The dataset over TFRecord files: rows and batches alike, parsed on threads or not,
//! resumed from a position.

use super::*;
use crate::{DatasetExt, Labels};

#[test]
fn the_dataset_reads_rows_and_batches_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.tfrecord");
    let mut writer =
        crate::TfRecordWriter::create(&path, crate::TfRecordCompression::None).unwrap();
    for i in 0..23i64 {
        writer
            .write_record(&record(&[
                ("image", floats(&[i as f32, 0.5, -1.0, 2.0])),
                ("colour", strings(&[format!("c{}", i % 4).as_bytes()])),
                ("count", ints(&[i * 10])),
                ("label", ints(&[i % 3])),
                ("pair", strings(&[b"a", b"b"])),
            ]))
            .unwrap();
    }
    writer.finish().unwrap();
    let spec = spec(MIXED);
    let rows: Vec<Example> = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 23);
    assert_eq!(rows[4].categorical, ["c0", "", "a", "b"]);
    let want: Vec<ColumnarBatch> = rows
        .chunks(5)
        .map(|c| ColumnarBatch::from_examples(c).unwrap())
        .collect();
    for threads in [None, Some(2)] {
        let open = || {
            let batches = TfExampleDataset::open([&path], &spec)
                .unwrap()
                .into_batches(5, false);
            match threads {
                Some(n) => batches.with_parse_threads(crate::ParallelCalls::Fixed(n)),
                None => batches,
            }
        };
        let got: Vec<ColumnarBatch> = open().iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, want, "{threads:?}");
        let Labels::Class(labels) = &got[1].labels else {
            panic!()
        };
        assert_eq!(labels, &[2, 0, 1, 2, 0]);
        // Resume after the second batch.
        let mut ds = open();
        ds.next_item().unwrap().unwrap();
        ds.next_item().unwrap().unwrap();
        let saved = ds.position();
        let mut resumed = open();
        resumed.restore(&saved).unwrap();
        let rest: Vec<ColumnarBatch> = resumed.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(rest, want[2..]);
    }
    let dropped = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .into_batches(5, true);
    assert_eq!(dropped.count_rows(), 20);
    let mut zero = TfExampleDataset::open([&path], &spec)
        .unwrap()
        .into_batches(0, false);
    assert!(matches!(
        zero.next_item(),
        Some(Err(Error::InvalidArgument(_)))
    ));
    assert!(zero.next_item().is_none());
}

trait CountRows {
    fn count_rows(self) -> usize;
}

impl CountRows for TfExampleBatches {
    fn count_rows(mut self) -> usize {
        self.iter().map(|b| b.unwrap().rows).sum()
    }
}
