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
/// extension or the gzip magic bytes), checking its magic number and size. The path must
/// be a regular file (or a symlink to one), not a device, a FIFO or a directory.
pub fn read_idx(path: impl AsRef<Path>) -> Result<IdxArray, Error> {
    let path = path.as_ref();
    let mut raw = Vec::new();
    super::regular::open_regular(path)?
        .read_to_end(&mut raw)
        .map_err(|e| Error::io(path, e))?;
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
mod tests;
