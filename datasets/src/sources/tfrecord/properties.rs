//! Properties of TFRecord reading: any bytes after any valid records, plain or compressed,
//! are records or one error that ends the stream, never a panic; read one by one or a
//! chunk at a time, the records and the error are the same.

use proptest::prelude::*;

use super::*;

/// Every record one by one, and the first error's message.
fn one_by_one(path: &Path, compression: TfRecordCompression) -> (Vec<Vec<u8>>, Option<String>) {
    let mut ds = TfRecordDataset::open_with([path], compression).unwrap();
    let mut records = Vec::new();
    while let Some(next) = ds.next_item() {
        match next {
            Ok(record) => records.push(record),
            Err(e) => {
                assert!(ds.next_item().is_none(), "an error ends the stream");
                return (records, Some(e.to_string()));
            }
        }
    }
    (records, None)
}

/// The same, a chunk of `size` at a time, each record's CRC checked before the chunk's error.
fn chunked(
    path: &Path,
    compression: TfRecordCompression,
    size: usize,
) -> (Vec<Vec<u8>>, Option<String>) {
    let mut ds = TfRecordDataset::open_with([path], compression).unwrap();
    let pool = BufferPool::default();
    let mut records = Vec::new();
    while let Some(next) = ds.next_chunk(size, &pool) {
        let mut chunk = match next {
            Ok(chunk) => chunk,
            Err(e) => return (records, Some(e.to_string())),
        };
        for (data, meta) in chunk.iter() {
            if let Err(e) = ds.files()[meta.file].check_data(meta, data) {
                return (records, Some(e.to_string()));
            }
            records.push(data.to_vec());
        }
        if let Some(e) = chunk.error.take() {
            return (records, Some(e.to_string()));
        }
    }
    (records, None)
}

fn compression() -> impl Strategy<Value = TfRecordCompression> {
    prop_oneof![
        Just(TfRecordCompression::None),
        Just(TfRecordCompression::Gzip),
        Just(TfRecordCompression::Zlib),
    ]
}

proptest! {
    #[test]
    fn any_bytes_after_valid_records_are_records_or_one_error(
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6),
        tail in prop::collection::vec(any::<u8>(), 0..40),
        flip in prop::option::of(any::<prop::sample::Index>()),
        compression in compression(),
        size in 1usize..5,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let mut writer = TfRecordWriter::create(&path, TfRecordCompression::None).unwrap();
        for r in &records {
            writer.write_record(r).unwrap();
        }
        writer.finish().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&tail);
        if let Some(flip) = flip {
            let at = flip.index(bytes.len().max(1));
            if let Some(b) = bytes.get_mut(at) {
                *b ^= 0x20;
            }
        }
        let stored = match compression {
            TfRecordCompression::None => bytes.clone(),
            TfRecordCompression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut e, &bytes).unwrap();
                e.finish().unwrap()
            }
            TfRecordCompression::Zlib => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut e, &bytes).unwrap();
                e.finish().unwrap()
            }
        };
        std::fs::write(&path, &stored).unwrap();
        let (got, error) = one_by_one(&path, compression);
        prop_assert_eq!(chunked(&path, compression, size), (got.clone(), error.clone()));
        // Unchanged records before the damage read back as written.
        if flip.is_none() {
            prop_assert_eq!(&got[..], &records[..]);
            prop_assert_eq!(error.is_some(), !tail.is_empty());
        } else {
            prop_assert!(got.len() <= records.len() + 1);
        }
    }
}
