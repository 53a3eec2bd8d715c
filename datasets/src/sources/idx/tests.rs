use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::DatasetExt;

fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    if name.ends_with(".gz") {
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap();
    } else {
        std::fs::write(&path, bytes).unwrap();
    }
    path
}

fn pair(dir: &tempfile::TempDir, gz: bool) -> (PathBuf, PathBuf) {
    let ext = if gz { ".gz" } else { "" };
    let pixels: Vec<u8> = (0..3 * 2 * 2).map(|i| (i * 20) as u8).collect();
    (
        write(dir, &format!("img{ext}"), &idx(&[3, 2, 2], &pixels)),
        write(dir, &format!("lab{ext}"), &idx(&[3], &[7, 0, 255])),
    )
}

fn err(r: Result<IdxDataset, Error>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn reads_images_and_labels_plain_and_gz() {
    let dir = tempfile::tempdir().unwrap();
    for gz in [false, true] {
        let (img, lab) = pair(&dir, gz);
        let mut ds = IdxDataset::open(&img, &lab).unwrap();
        assert_eq!(ds.len(), 3);
        assert!(!ds.is_empty());
        assert_eq!(ds.image_shape(), [2, 2]);
        assert_eq!(ds.feature_len(), 4);
        assert_eq!(ds.len_hint(), Some(3));
        let all: Vec<Example> = ds.iter().map(Result::unwrap).collect();
        assert_eq!(
            all[0].dense,
            vec![0.0, 20.0 / 255.0, 40.0 / 255.0, 60.0 / 255.0]
        );
        assert_eq!(all[2].label, Label::Class(255));
        ds.restore(&Position::Index(2)).unwrap();
        assert_eq!(ds.next_item().unwrap().unwrap(), all[2]);
        assert!(ds.restore(&Position::Index(4)).is_err());
        assert!(ds.restore(&Position::Cache { index: 0 }).is_err());
        assert!(err(IdxDataset::mnist(&img, &lab)).contains("are 28x28, found [2, 2]"));
    }
}

#[test]
fn bad_magic() {
    let dir = tempfile::tempdir().unwrap();
    let (_, lab) = pair(&dir, false);
    let bad = write(&dir, "bad", b"PK\x03\x04 something else");
    let msg = err(IdxDataset::open(&bad, &lab));
    assert_eq!(
        msg,
        format!(
            "{}: bad magic number 0x504b0304: not an IDX file",
            bad.display()
        )
    );
    let float = write(&dir, "float", &[0, 0, 0x0D, 1, 0, 0, 0, 0]);
    assert!(err(IdxDataset::open(&float, &lab)).contains("element type 0x0d"));
    let zero = write(&dir, "zero", &[0, 0, 8, 0]);
    assert!(err(IdxDataset::open(&zero, &lab)).contains("0 dimensions"));
}

#[test]
fn truncated_files() {
    let dir = tempfile::tempdir().unwrap();
    let (img, _) = pair(&dir, false);
    let tiny = write(&dir, "tiny", &[0, 0]);
    assert!(err(IdxDataset::open(&img, &tiny)).contains("truncated: 2 bytes"));
    let short_header = write(&dir, "sh", &[0, 0, 8, 3, 0, 0, 0, 3]);
    assert!(err(IdxDataset::open(&short_header, &img)).contains("header of a 3-dimensional"));
    let full = idx(&[3, 2, 2], &[1; 12]);
    let cut = write(&dir, "cut", &full[..full.len() - 5]);
    let msg = err(IdxDataset::open(&cut, &img));
    assert!(msg.contains("truncated: dimensions [3, 2, 2] need 12 data bytes, found 7"));
    assert!(msg.starts_with(&cut.display().to_string()));
    let long = write(&dir, "long", &idx(&[2], &[1, 2, 3]));
    assert!(err(IdxDataset::open(&img, &long)).contains("1 bytes after the data"));
    let gz = write(&dir, "x.gz", &full);
    let gz_bytes = std::fs::read(&gz).unwrap();
    let gz_cut = write(&dir, "cut.gz.bin", &gz_bytes[..gz_bytes.len() - 8]);
    assert!(err(IdxDataset::open(&gz_cut, &img)).contains("bad gzip data"));
}

#[test]
fn shape_and_count_mismatches() {
    let dir = tempfile::tempdir().unwrap();
    let (img, lab) = pair(&dir, false);
    let two_labels = write(&dir, "two", &idx(&[2], &[1, 2]));
    let msg = err(IdxDataset::open(&img, &two_labels));
    assert!(msg.contains("2 labels for 3 images"), "{msg}");
    assert!(err(IdxDataset::open(&lab, &lab)).contains("at least 2 dimensions"));
    assert!(err(IdxDataset::open(&img, &img)).contains("labels need 1 dimension"));
    assert!(err(IdxDataset::open(dir.path().join("none"), &lab)).contains("none: "));
}
