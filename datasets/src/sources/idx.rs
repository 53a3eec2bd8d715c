//! IDX source (the MNIST file format): [`IdxDataset`] and [`read_idx`].

use std::io::Read;
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::{Dataset, Error, Example, Label, Position};

/// An array of unsigned bytes read from an IDX file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxArray {
    /// Dimensions, outermost first (`[60000, 28, 28]` for MNIST training images).
    pub dims: Vec<usize>,
    /// The elements, row-major.
    pub data: Vec<u8>,
}

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        file: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads a whole IDX file of unsigned bytes (type `0x08`), plain or gzip (by the `.gz`
/// extension or the gzip magic bytes), checking its magic number and size.
pub fn read_idx(path: impl AsRef<Path>) -> Result<IdxArray, Error> {
    let path = path.as_ref();
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
        || raw.starts_with(&[0x1f, 0x8b]);
    let bytes = if gz { gunzip(path, &raw)? } else { raw };
    parse_idx(path, bytes)
}

/// The longest IDX header: magic, then 255 dimensions.
const MAX_HEADER: usize = 4 + 4 * 255;

/// Decompresses the header, then no more than the data it declares and one byte (enough
/// to show trailing bytes): a small file that inflates without end is not read whole.
fn gunzip(path: &Path, raw: &[u8]) -> Result<Vec<u8>, Error> {
    let bad = |e: std::io::Error| format_error(path, format!("bad gzip data: {e}"));
    let mut decoder = MultiGzDecoder::new(raw);
    let mut out = Vec::new();
    (&mut decoder)
        .take(MAX_HEADER as u64)
        .read_to_end(&mut out)
        .map_err(bad)?;
    let Some(declared) = declared_len(&out) else {
        // Too short or malformed: `parse_idx` says what is wrong.
        return Ok(out);
    };
    let more = declared.saturating_add(1).saturating_sub(out.len());
    (&mut decoder)
        .take(more as u64)
        .read_to_end(&mut out)
        .map_err(bad)?;
    Ok(out)
}

/// The length a valid header in `bytes` declares for the whole file (header and data).
fn declared_len(bytes: &[u8]) -> Option<usize> {
    let ndims = usize::from(*bytes.get(3)?);
    let header = 4 + 4 * ndims;
    bytes
        .get(4..header)?
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .try_fold(1usize, |acc, d| acc.checked_mul(d))?
        .checked_add(header)
}

fn parse_idx(path: &Path, mut bytes: Vec<u8>) -> Result<IdxArray, Error> {
    if bytes.len() < 4 {
        return Err(format_error(
            path,
            format!(
                "truncated: {} bytes, too short for an IDX header",
                bytes.len()
            ),
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(format_error(
            path,
            format!(
                "bad magic number 0x{:02x}{:02x}{:02x}{:02x}: not an IDX file",
                bytes[0], bytes[1], bytes[2], bytes[3]
            ),
        ));
    }
    if bytes[2] != 0x08 {
        return Err(format_error(
            path,
            format!(
                "element type 0x{:02x} is not supported (only unsigned bytes, 0x08)",
                bytes[2]
            ),
        ));
    }
    let ndims = usize::from(bytes[3]);
    if ndims == 0 {
        return Err(format_error(path, "IDX header declares 0 dimensions"));
    }
    let header = 4 + 4 * ndims;
    if bytes.len() < header {
        return Err(format_error(
            path,
            format!(
                "truncated: {} bytes, the header of a {ndims}-dimensional IDX file needs {header}",
                bytes.len()
            ),
        ));
    }
    let dims: Vec<usize> = bytes[4..header]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let size = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format_error(path, format!("dimensions {dims:?} overflow")))?;
    let found = bytes.len() - header;
    if found < size {
        return Err(format_error(
            path,
            format!("truncated: dimensions {dims:?} need {size} data bytes, found {found}"),
        ));
    }
    if found > size {
        return Err(format_error(
            path,
            format!(
                "{} bytes after the data for dimensions {dims:?}",
                found - size
            ),
        ));
    }
    bytes.drain(..header);
    Ok(IdxArray { dims, data: bytes })
}

/// Images and labels from a pair of IDX files, as [`Example`]s: `dense` is the image's
/// pixels scaled from `0..=255` to `[0, 1]` (784 for MNIST), `label` is
/// [`Label::Class`]. Both files are read into memory when opened; the position is the
/// index of the next example.
#[derive(Clone, Debug)]
pub struct IdxDataset {
    images: IdxArray,
    labels: Vec<u8>,
    item_size: usize,
    next: usize,
}

impl IdxDataset {
    /// Opens an images file (`n × d1 × ...`, at least 2 dimensions) and a labels file
    /// (`n`), checking that the counts match.
    pub fn open(images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Result<Self, Error> {
        let (images_path, labels_path) = (images.as_ref(), labels.as_ref());
        let images = read_idx(images_path)?;
        let labels = read_idx(labels_path)?;
        if images.dims.len() < 2 {
            return Err(format_error(
                images_path,
                format!(
                    "images need at least 2 dimensions (count, pixels...), found {:?}",
                    images.dims
                ),
            ));
        }
        if labels.dims.len() != 1 {
            return Err(format_error(
                labels_path,
                format!("labels need 1 dimension, found {:?}", labels.dims),
            ));
        }
        if images.dims[0] != labels.dims[0] {
            return Err(format_error(
                labels_path,
                format!(
                    "{} labels for {} images in {}",
                    labels.dims[0],
                    images.dims[0],
                    images_path.display()
                ),
            ));
        }
        let item_size = images.dims[1..].iter().product();
        Ok(IdxDataset {
            images,
            labels: labels.data,
            item_size,
            next: 0,
        })
    }

    /// Opens MNIST (or Fashion-MNIST) files: like [`IdxDataset::open`], and the images
    /// must be 28×28.
    pub fn mnist(images: impl AsRef<Path>, labels: impl AsRef<Path>) -> Result<Self, Error> {
        let images = images.as_ref();
        let ds = IdxDataset::open(images, labels)?;
        if ds.image_shape() != [28, 28] {
            return Err(format_error(
                images,
                format!("MNIST images are 28x28, found {:?}", ds.image_shape()),
            ));
        }
        Ok(ds)
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Shape of one image (`[28, 28]` for MNIST).
    pub fn image_shape(&self) -> &[usize] {
        &self.images.dims[1..]
    }

    /// Values per example in `dense` (784 for MNIST).
    pub fn feature_len(&self) -> usize {
        self.item_size
    }

    /// Example `i` (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Example> {
        let label = *self.labels.get(i)?;
        let pixels = &self.images.data[i * self.item_size..(i + 1) * self.item_size];
        Some(Example {
            dense: pixels.iter().map(|&p| f32::from(p) / 255.0).collect(),
            categorical: Vec::new(),
            label: Label::Class(u32::from(label)),
        })
    }
}

impl Dataset for IdxDataset {
    type Item = Example;

    fn next_item(&mut self) -> Option<Result<Example, Error>> {
        let example = self.get(self.next)?;
        self.next += 1;
        Some(Ok(example))
    }

    fn len_hint(&self) -> Option<usize> {
        Some(self.len())
    }

    fn position(&self) -> Position {
        Position::Index(self.next as u64)
    }

    fn restore(&mut self, position: &Position) -> Result<(), Error> {
        match *position {
            Position::Index(i) if i as usize <= self.len() => {
                self.next = i as usize;
                Ok(())
            }
            Position::Index(i) => Err(Error::Position(format!(
                "index {i} is past the end of {} examples",
                self.len()
            ))),
            _ => Err(Error::position_mismatch("index", position)),
        }
    }
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
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
}
