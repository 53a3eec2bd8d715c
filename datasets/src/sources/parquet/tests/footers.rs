//! Footers that are valid Parquet but hold what the reader cannot take on trust: negative or
//! overflowing row counts, and a column name given twice.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Int64Array};
use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};

use super::super::{infer_parquet_schema, ParquetDataset};
use super::write;
use crate::Schema;

/// Row counts written first, one per row group, distinct, and whose encodings (9 bytes of
/// zigzag varint) occur nowhere else in the footer; small enough that the writer's own sum
/// of them fits in i64.
const PLACEHOLDER: i64 = 0x00ab_cdef_0123_4560;

/// `value` as thrift's compact protocol writes an i64: zigzag, then a varint.
fn varint(value: i64) -> Vec<u8> {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    let mut bytes = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            bytes.push(byte);
            return bytes;
        }
        bytes.push(byte | 0x80);
    }
}

/// A file of `counts.len()` row groups of 2 rows of column `x`, whose footer is rewritten
/// by the parquet crate's own writer to say row group `i` holds `counts[i]` rows. The writer
/// sums the counts as i64 (a debug build panics past i64::MAX), so it writes placeholders,
/// which are then patched in the encoded footer: compact thrift has no lengths but the
/// footer's own, so a varint of another size only changes that.
fn with_row_counts(dir: &Path, counts: &[i64]) -> PathBuf {
    let n = 2 * counts.len() as i64;
    let x: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
    let path = write(dir, "counts.parquet", vec![("x", x)], 2);
    let bytes = std::fs::read(&path).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .unwrap();
    assert_eq!(metadata.num_row_groups(), counts.len());
    let mut builder = metadata.into_builder();
    let groups = (builder.take_row_groups().into_iter().enumerate())
        .map(|(i, g)| {
            g.into_builder()
                .set_num_rows(PLACEHOLDER + i as i64)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let metadata = builder.set_row_groups(groups).build();
    let mut footer = Vec::new();
    ParquetMetaDataWriter::new(&mut footer, &metadata)
        .finish()
        .unwrap();
    // The footer is the thrift, its length (4 bytes, little-endian) and "PAR1".
    let mut thrift = footer[..footer.len() - 8].to_vec();
    for (i, &count) in counts.iter().enumerate() {
        let placeholder = varint(PLACEHOLDER + i as i64);
        let found: Vec<usize> = (thrift.windows(placeholder.len()).enumerate())
            .filter(|(_, w)| *w == placeholder)
            .map(|(at, _)| at)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "row group {i}'s count is not where it was expected"
        );
        thrift.splice(found[0]..found[0] + placeholder.len(), varint(count));
    }
    let old_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    let mut patched = bytes[..bytes.len() - 8 - old_len as usize].to_vec();
    patched.extend_from_slice(&thrift);
    patched.extend_from_slice(&(thrift.len() as u32).to_le_bytes());
    patched.extend_from_slice(b"PAR1");
    std::fs::write(&path, patched).unwrap();
    path
}

fn open_error(path: &Path) -> String {
    match ParquetDataset::open(path, Schema::new().float("x")) {
        Ok(ds) => panic!("opened, with row groups {:?}", ds.row_groups()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn patched_footers_read_back_as_written() {
    // The patching itself, on counts the reader takes.
    let dir = tempfile::tempdir().unwrap();
    let path = with_row_counts(dir.path(), &[2, 1, 2]);
    let ds = ParquetDataset::open(&path, Schema::new().float("x")).unwrap();
    assert_eq!(ds.row_groups(), [2, 1, 2]);
}

#[test]
fn a_negative_row_count_is_refused_naming_the_row_group() {
    // The parquet crate reads it as it is: the footer's counts are plain i64.
    let dir = tempfile::tempdir().unwrap();
    let path = with_row_counts(dir.path(), &[2, -3, 2]);
    let file = std::fs::File::open(&path).unwrap();
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .unwrap();
    assert_eq!(metadata.row_group(1).num_rows(), -3);
    assert_eq!(
        open_error(&path),
        format!(
            "{}: row group 1: the footer says it holds -3 rows",
            path.display()
        )
    );
}

#[test]
fn row_counts_adding_up_beyond_u64_are_refused_naming_the_row_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_row_counts(dir.path(), &[i64::MAX, i64::MAX, i64::MAX]);
    let before = 2 * i64::MAX as u64;
    assert_eq!(
        open_error(&path),
        format!(
            "{}: row group 2: the footer says it holds {} rows, which with the {before} rows \
             before it are more than {} in all",
            path.display(),
            i64::MAX,
            u64::MAX
        )
    );
}

#[test]
fn a_column_name_the_file_holds_twice_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let column = |v: f32| -> ArrayRef { Arc::new(Float32Array::from(vec![v; 3])) };
    let path = write(
        dir.path(),
        "twice.parquet",
        vec![
            ("a", column(0.0)),
            ("x", column(1.0)),
            ("b", column(2.0)),
            ("x", column(3.0)),
        ],
        3,
    );
    let expected = format!(
        "{}: column x: the file has two columns of this name (columns 1 and 3, from 0): which \
         one to read is ambiguous",
        path.display()
    );
    assert_eq!(open_error(&path), expected);
    let error = infer_parquet_schema(&path, None).unwrap_err();
    assert_eq!(error.to_string(), expected);
    // A name given twice among columns the schema does not read is no guess.
    let a = ParquetDataset::open(&path, Schema::new().float("a").float("b")).unwrap();
    assert_eq!(a.row_groups(), [3]);
}
