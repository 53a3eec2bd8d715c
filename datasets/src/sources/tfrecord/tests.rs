//! TFRecord files written and read back: framing, compressions and positions, damaged and
//! foreign files, reads a chunk at a time.

mod bad_files;
mod chunks;
mod reading;

use std::path::{Path, PathBuf};

use super::*;
use crate::DatasetExt;

fn records(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| (0..(i * 37) % 300).map(|j| (i * 7 + j) as u8).collect())
        .collect()
}

fn write(path: &Path, records: &[Vec<u8>], compression: TfRecordCompression) {
    let mut w = TfRecordWriter::create(path, compression).unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    w.finish().unwrap();
}

fn read_all(ds: &mut TfRecordDataset) -> Result<Vec<Vec<u8>>, Error> {
    ds.iter().collect()
}

const ALL: [TfRecordCompression; 3] = [
    TfRecordCompression::None,
    TfRecordCompression::Gzip,
    TfRecordCompression::Zlib,
];

fn name(compression: TfRecordCompression) -> &'static str {
    match compression {
        TfRecordCompression::None => "r.tfrecord",
        TfRecordCompression::Gzip => "r.tfrecord.gz",
        TfRecordCompression::Zlib => "r.tfrecord.zlib",
    }
}

/// A file of `records(5)` and the offset of each record.
fn plain_file(dir: &Path) -> (PathBuf, Vec<u64>) {
    let path = dir.join("data.tfrecord");
    let recs = records(5);
    write(&path, &recs, TfRecordCompression::None);
    let mut offsets = vec![0u64];
    for r in &recs {
        offsets.push(offsets.last().unwrap() + 16 + r.len() as u64);
    }
    (path, offsets)
}

fn first_error(path: &Path) -> (usize, String) {
    let mut ds = TfRecordDataset::open([path]).unwrap();
    let mut good = 0;
    loop {
        match ds.next_item() {
            Some(Ok(_)) => good += 1,
            Some(Err(e)) => {
                assert!(ds.next_item().is_none(), "an error ends the stream");
                let file = format!("{}: ", path.display());
                return (good, e.to_string().replacen(&file, "", 1));
            }
            None => panic!("no error in {}", path.display()),
        }
    }
}
