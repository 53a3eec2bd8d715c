//! Damaged files and files that are not TFRecords: errors naming the record and its offset,
//! or why the file is refused.

use super::*;

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
fn a_position_with_more_records_than_bytes_hold_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = plain_file(dir.path());
    let mut ds = TfRecordDataset::open([&path]).unwrap();
    // Each record takes at least 16 bytes: 2 records cannot end before byte 32.
    let bad = Position::TfRecord {
        file: 0,
        record: u64::MAX,
        byte: offsets[1],
    };
    let err = ds.restore(&bad).unwrap_err().to_string();
    assert!(
        err.contains("not the one the position was taken from"),
        "{err}"
    );
    let fits = Position::TfRecord {
        file: 0,
        record: 1,
        byte: offsets[1],
    };
    ds.restore(&fits).unwrap();
    assert_eq!(read_all(&mut ds).unwrap().len(), 4);
}
