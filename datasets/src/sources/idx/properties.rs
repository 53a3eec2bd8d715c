//! Properties of IDX reading: any bytes, plain or gzipped, are an array or an error, never
//! a panic, and a header promising more data than there is allocates nothing for it.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use proptest::prelude::*;

use super::*;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn a_small_file_that_inflates_without_end_is_not_read_whole() {
    // A header for 10 bytes of data, then 1 GB of zeros: about 1 MB gzipped.
    let mut bytes = vec![0, 0, 0x08, 1];
    bytes.extend_from_slice(&10u32.to_be_bytes());
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(&bytes).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..1024 {
        encoder.write_all(&zeros).unwrap();
    }
    let packed = encoder.finish().unwrap();
    assert!(packed.len() < 2 << 20, "{} bytes", packed.len());
    let dir = tempfile::tempdir().unwrap();
    let err = read_idx(write(dir.path(), "bomb.idx.gz", &packed)).unwrap_err();
    // About a header's worth past the declared data was inflated, not the gigabyte.
    let message = err.to_string();
    let trailing: usize = message
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!(trailing <= MAX_HEADER, "{message}");
}

proptest! {
    #[test]
    fn any_bytes_are_an_array_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let _ = read_idx(write(dir.path(), "plain.idx", &bytes));
        let _ = read_idx(write(dir.path(), "packed.idx.gz", &gzip(&bytes)));
    }

    #[test]
    fn headers_with_any_dimensions_are_checked_against_the_data(
        dims in prop::collection::vec(any::<u32>(), 1..5),
        data in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = vec![0, 0, 0x08, dims.len() as u8];
        for d in &dims {
            bytes.extend_from_slice(&d.to_be_bytes());
        }
        bytes.extend_from_slice(&data);
        let dir = tempfile::tempdir().unwrap();
        let expected = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
        for path in [
            write(dir.path(), "plain.idx", &bytes),
            write(dir.path(), "packed.idx.gz", &gzip(&bytes)),
        ] {
            match read_idx(&path) {
                Ok(array) => {
                    prop_assert_eq!(Some(data.len()), expected);
                    prop_assert_eq!(&array.data, &data);
                    let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
                    prop_assert_eq!(&array.dims, &dims);
                }
                Err(_) => prop_assert_ne!(Some(data.len()), expected),
            }
        }
    }
}
