//! Records written and read back: every compression, TensorFlow's framing, empty files and
//! records, files in order, positions that resume anywhere, records larger than a read.

use super::*;

#[test]
fn round_trip_in_every_compression() {
    let dir = tempfile::tempdir().unwrap();
    let want = records(40);
    for compression in ALL {
        let path = dir.path().join(name(compression));
        write(&path, &want, compression);
        let got = read_all(&mut TfRecordDataset::open([&path]).unwrap()).unwrap();
        assert_eq!(got, want, "{compression}");
        let forced = TfRecordDataset::open_with([&path], compression).unwrap();
        assert_eq!(forced.count_items(), 40);
    }
}

trait CountItems {
    fn count_items(self) -> usize;
}

impl<D: Dataset> CountItems for D {
    fn count_items(mut self) -> usize {
        self.iter().collect::<Result<Vec<_>, _>>().unwrap().len()
    }
}

#[test]
// The mask as TensorFlow's documentation writes it.
#[allow(clippy::manual_rotate)]
fn the_framing_is_tensorflows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.tfrecord");
    write(&path, &[b"abc".to_vec()], TfRecordCompression::None);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 12 + 3 + 4);
    assert_eq!(&bytes[..8], &3u64.to_le_bytes());
    let masked = |data: &[u8]| {
        let crc = crc32c::crc32c(data);
        ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
    };
    assert_eq!(&bytes[8..12], &masked(&bytes[..8]).to_le_bytes());
    assert_eq!(&bytes[12..15], b"abc");
    assert_eq!(&bytes[15..], &masked(b"abc").to_le_bytes());
}

#[test]
fn empty_files_and_empty_records() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.tfrecord");
    std::fs::write(&empty, b"").unwrap();
    let blanks = dir.path().join("blanks.tfrecord");
    write(
        &blanks,
        &[vec![], vec![], vec![1]],
        TfRecordCompression::None,
    );
    let mut ds = TfRecordDataset::open([&empty, &blanks, &empty]).unwrap();
    assert_eq!(read_all(&mut ds).unwrap(), [vec![], vec![], vec![1]]);
    assert_eq!(
        ds.position(),
        Position::TfRecord {
            file: 3,
            record: 0,
            byte: 0
        }
    );
}

#[test]
fn files_are_read_in_order_and_positions_resume_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let all = records(30);
    let mut paths = Vec::new();
    for (i, compression) in ALL.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}-{}", name(compression)));
        write(&path, &all[i * 10..(i + 1) * 10], compression);
        paths.push(path);
    }
    let open = || TfRecordDataset::open(&paths).unwrap();
    assert_eq!(read_all(&mut open()).unwrap(), all);
    for stop in 0..=30 {
        let mut ds = open();
        for _ in 0..stop {
            ds.next_item().unwrap().unwrap();
        }
        let saved = serde_json::to_string(&ds.position()).unwrap();
        let mut resumed = open();
        resumed
            .restore(&serde_json::from_str(&saved).unwrap())
            .unwrap();
        assert_eq!(read_all(&mut resumed).unwrap(), all[stop..], "stop {stop}");
    }
    // A compressed file that is not the one the position was taken from.
    let mut ds = open();
    let wrong = Position::TfRecord {
        file: 1,
        record: 3,
        byte: 7,
    };
    let err = ds.restore(&wrong).unwrap_err().to_string();
    assert!(err.contains("record 3 starts at byte"), "{err}");
    let err = ds
        .restore(&Position::TfRecord {
            file: 4,
            record: 0,
            byte: 0,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot restore position: file 4 of a TFRecord dataset of 3 files"
    );
    let err = ds.restore(&Position::Index(2)).unwrap_err();
    assert!(
        err.to_string().contains("expected a tfrecord position"),
        "{err}"
    );
}

#[test]
fn records_larger_than_the_read_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..(1u32 << 20) + 3).map(|i| (i % 251) as u8).collect();
    for compression in ALL {
        let path = dir.path().join(name(compression));
        write(&path, &[big.clone(), vec![9], big.clone()], compression);
        let got = read_all(&mut TfRecordDataset::open([&path]).unwrap()).unwrap();
        assert_eq!(got, [big.clone(), vec![9], big.clone()]);
    }
}

#[test]
fn a_file_is_replaced_only_by_a_finished_writer() {
    let dir = tempfile::tempdir().unwrap();
    let entries = || std::fs::read_dir(dir.path()).unwrap().count();
    for compression in ALL {
        let path = dir.path().join(name(compression));
        write(&path, &records(3), compression);
        let mut unfinished = TfRecordWriter::create(&path, compression).unwrap();
        for r in records(40) {
            unfinished.write_record(&r).unwrap();
        }
        drop(unfinished);
        let kept = read_all(&mut TfRecordDataset::open([&path]).unwrap()).unwrap();
        assert_eq!(kept, records(3), "{compression}: the old file, whole");

        let mut writer = TfRecordWriter::create(&path, compression).unwrap();
        writer.write_record(b"new").unwrap();
        let still = read_all(&mut TfRecordDataset::open([&path]).unwrap()).unwrap();
        assert_eq!(still, records(3), "{compression}: unchanged until finished");
        writer.finish().unwrap();
        let new = read_all(&mut TfRecordDataset::open([&path]).unwrap()).unwrap();
        assert_eq!(new, [b"new".to_vec()], "{compression}");
    }
    assert_eq!(entries(), ALL.len(), "no temp file left");
    // A device is written through, not renamed over.
    let mut null = TfRecordWriter::create("/dev/null", TfRecordCompression::None).unwrap();
    null.write_record(b"gone").unwrap();
    null.finish().unwrap();
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
}
