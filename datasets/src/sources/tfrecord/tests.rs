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

#[test]
fn a_flipped_byte_is_an_error_naming_the_record_and_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = plain_file(dir.path());
    let clean = std::fs::read(&path).unwrap();
    // In record 3's data, its data CRC, its length, its length CRC.
    let start = offsets[2] as usize;
    for (at, good, want) in [
        (start + 12 + 5, 2, "record 3 (byte 69): data CRC mismatch"),
        (
            offsets[3] as usize - 1,
            2,
            "record 3 (byte 69): data CRC mismatch",
        ),
        (start + 1, 2, "record 3 (byte 69): length CRC mismatch"),
        (start + 9, 2, "record 3 (byte 69): length CRC mismatch"),
    ] {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let (read, err) = first_error(&path);
        assert_eq!(read, good);
        assert!(err.starts_with(want), "byte {at}: {err}");
        assert!(err.ends_with("the record is damaged"), "{err}");
    }
    assert_eq!(offsets[2], 69);
}

#[test]
fn a_truncated_file_is_an_error_wherever_it_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = plain_file(dir.path());
    let clean = std::fs::read(&path).unwrap();
    let last = offsets[4];
    for cut in (last + 1)..offsets[5] {
        std::fs::write(&path, &clean[..cut as usize]).unwrap();
        let (read, err) = first_error(&path);
        assert_eq!(read, 4, "cut at {cut}");
        assert!(
            err.starts_with(&format!("record 5 (byte {last}): truncated: ")),
            "{err}"
        );
    }
    for compression in [TfRecordCompression::Gzip, TfRecordCompression::Zlib] {
        let path = dir.path().join(name(compression));
        write(&path, &records(5), compression);
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() - 30]).unwrap();
        let (read, err) = first_error(&path);
        assert!(read < 5, "{compression}");
        assert!(err.contains("-decompressed stream): "), "{err}");
        assert!(err.contains(compression.tf_name()), "{err}");
    }
}

#[test]
fn a_huge_length_with_a_valid_crc_is_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.tfrecord");
    let length = (1u64 << 60).to_le_bytes();
    let mut bytes = length.to_vec();
    bytes.extend_from_slice(&masked_crc32c(&length).to_le_bytes());
    bytes.extend_from_slice(b"short");
    std::fs::write(&path, &bytes).unwrap();
    let (_, err) = first_error(&path);
    assert_eq!(
        err,
        "record 1 (byte 0): truncated: the record holds 1152921504606846976 data bytes but the \
         file ends 5 bytes after its header"
    );
    let gz = dir.path().join("huge.tfrecord.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &bytes).unwrap();
    std::fs::write(&gz, encoder.finish().unwrap()).unwrap();
    let (_, err) = first_error(&gz);
    assert!(
        err.contains("truncated: the file ends 5 bytes into the record's"),
        "{err}"
    );
}

#[test]
fn other_files_are_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("data.tfrecord.gz");
    write(&gz, &records(3), TfRecordCompression::Gzip);
    let plain = dir.path().join("data.tfrecord");
    std::fs::copy(&gz, &plain).unwrap();
    let (_, err) = first_error(&plain);
    assert!(err.contains("the file starts like a GZIP stream"), "{err}");
    let zlib = dir.path().join("z.tfrecord");
    write(&zlib, &records(3), TfRecordCompression::Zlib);
    let (_, err) = first_error(&zlib);
    assert!(err.contains("the file starts like a ZLIB stream"), "{err}");
    let csv = dir.path().join("data.csv");
    std::fs::write(&csv, "a,b\n1,2\n3,4\n").unwrap();
    let (_, err) = first_error(&csv);
    assert!(
        err.starts_with("record 1 (byte 0): length CRC mismatch"),
        "{err}"
    );
    assert!(
        err.ends_with("not a TFRecord file, or a damaged one"),
        "{err}"
    );
    let err = TfRecordDataset::open([dir.path()]).err().unwrap();
    assert!(
        err.to_string()
            .ends_with("is a directory, not a regular file"),
        "{err}"
    );
    let missing = TfRecordDataset::open([dir.path().join("nope.tfrecord")])
        .err()
        .unwrap();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
    let none: [&Path; 0] = [];
    assert!(matches!(
        TfRecordDataset::open(none),
        Err(Error::InvalidArgument(_))
    ));
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.tfrecord");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = TfRecordDataset::open([&fifo]).err().unwrap();
    assert!(
        err.to_string()
            .ends_with("is a FIFO (named pipe), not a regular file"),
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

/// Every record of `ds` read a chunk of `size` at a time, with its file and record number,
/// and the position after each chunk; or the first error.
#[allow(clippy::type_complexity)]
fn chunked(
    ds: &mut TfRecordDataset,
    size: usize,
) -> Result<(Vec<(Vec<u8>, usize, u64)>, Vec<(usize, Position)>), Error> {
    let pool = BufferPool::default();
    let (mut records, mut positions) = (Vec::new(), Vec::new());
    while let Some(chunk) = ds.next_chunk(size, &pool) {
        let mut chunk = chunk?;
        assert!(chunk.len() <= size);
        for (data, meta) in chunk.iter() {
            ds.files()[meta.file].check_data(meta, data)?;
            records.push((data.to_vec(), meta.file, meta.record));
        }
        if let Some(e) = chunk.error.take() {
            return Err(e);
        }
        positions.push((records.len(), ds.position()));
    }
    Ok((records, positions))
}

#[test]
fn chunks_hold_the_records_in_order_across_files_and_resume_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    // Records of many sizes, one larger than a read, over three files of each compression.
    let mut all = records(50);
    all[17] = (0..(300u32 << 10)).map(|i| (i % 13) as u8).collect();
    let mut paths = Vec::new();
    let mut origin = Vec::new();
    for (i, compression) in ALL.into_iter().enumerate() {
        let range = match i {
            0 => 0..20,
            1 => 20..21,
            _ => 21..50,
        };
        let path = dir.path().join(format!("{i}-{}", name(compression)));
        write(&path, &all[range.clone()], compression);
        origin.extend(range.clone().map(|r| (i, (r - range.start) as u64)));
        paths.push(path);
    }
    let empty = dir.path().join("empty.tfrecord");
    std::fs::write(&empty, b"").unwrap();
    paths.insert(1, empty);
    for o in &mut origin {
        if o.0 > 0 {
            o.0 += 1;
        }
    }
    let open = || TfRecordDataset::open(&paths).unwrap();
    for size in [1, 3, 7, 64] {
        let (got, positions) = chunked(&mut open(), size).unwrap();
        let data: Vec<Vec<u8>> = got.iter().map(|r| r.0.clone()).collect();
        assert_eq!(data, all, "size {size}");
        let places: Vec<(usize, u64)> = got.iter().map(|r| (r.1, r.2)).collect();
        assert_eq!(places, origin, "size {size}");
        for (read, position) in positions {
            let mut resumed = open();
            resumed.restore(&position).unwrap();
            let rest = read_all(&mut resumed).unwrap();
            assert_eq!(rest, all[read..], "size {size}, after {read}");
        }
    }
}

#[test]
fn chunks_refuse_damage_as_single_records_do() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = plain_file(dir.path());
    let clean = std::fs::read(&path).unwrap();
    for edit in 0..4 {
        let mut bytes = clean.clone();
        match edit {
            0 => bytes[offsets[2] as usize + 20] ^= 1,
            1 => bytes[offsets[3] as usize + 2] ^= 1,
            2 => bytes.truncate(offsets[4] as usize + 30),
            _ => {
                // Two errors in one chunk: the first in record order is the one reported.
                bytes.truncate(offsets[4] as usize + 30);
                bytes[offsets[1] as usize + 14] ^= 1;
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        let (_, single) = first_error(&path);
        let err = chunked(&mut TfRecordDataset::open([&path]).unwrap(), 5).unwrap_err();
        let file = format!("{}: ", path.display());
        assert_eq!(
            err.to_string().replacen(&file, "", 1),
            single,
            "edit {edit}"
        );
    }
}
