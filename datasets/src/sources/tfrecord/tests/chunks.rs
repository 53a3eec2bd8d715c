//! Records read a chunk at a time: in order across files, resumed anywhere, and damage
//! refused as single records refuse it.

use super::*;

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

#[test]
fn a_chunk_size_past_the_records_reads_them_all_without_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = plain_file(dir.path());
    let mut ds = TfRecordDataset::open([&path]).unwrap();
    let (got, _) = chunked(&mut ds, usize::MAX).unwrap();
    assert_eq!(got.len(), 5);
}
