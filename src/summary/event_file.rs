//! Reading events files back: TFRecord framing with checked CRCs, then [`Event`] decoding.
//!
//! A record is `len: u64 LE`, `masked_crc32c(len bytes): u32 LE`, `len` bytes of data,
//! `masked_crc32c(data): u32 LE`, where `masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8`.

use std::path::{Path, PathBuf};

use super::event::Event;
use super::fault::SummaryFault;
use super::file_name::is_events_file;
use crate::error::{Error, Result};

/// TensorFlow's CRC mask: rotate right by 15 bits, then add this constant.
const MASK_DELTA: u32 = 0xa282_ead8;

/// The masked CRC-32C TFRecord stores for `data`.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Every event of the events file at `path`, in order; fails on a bad CRC or an event that
/// does not decode. A record cut short at the end of the file (a writer stopped, or still
/// writing, mid-record) ends the events, as TensorBoard reads it: the ones before it are
/// returned.
pub fn read_event_file(path: &Path) -> Result<Vec<Event>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let damaged = |fault| Error::Summary {
        path: path.to_path_buf(),
        fault,
    };
    parse_records(&bytes)
        .map_err(damaged)?
        .into_iter()
        .map(Event::decode)
        .collect::<std::result::Result<_, _>>()
        .map_err(damaged)
}

/// The events files directly in `dir`, sorted by name (the order TensorBoard reads them in).
pub fn event_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_file() && is_events_file(&path) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The complete records of `bytes`, up to a torn tail: a header, or the data and CRC its
/// length announces, that the bytes end before.
fn parse_records(mut bytes: &[u8]) -> std::result::Result<Vec<&[u8]>, SummaryFault> {
    let mut records = Vec::new();
    while let Some(header) = bytes.get(..12) {
        let record = records.len();
        let (len_bytes, len_crc) = header.split_at(8);
        if masked_crc32c(len_bytes) != u32::from_le_bytes(len_crc.try_into().expect("4 bytes")) {
            return Err(SummaryFault::LengthCrc { record });
        }
        let len = u64::from_le_bytes(len_bytes.try_into().expect("8 bytes"));
        let len = usize::try_from(len).map_err(|_| SummaryFault::RecordLength { record, len })?;
        let rest = &bytes[12..];
        if rest.len() < len.saturating_add(4) {
            break;
        }
        let (data, rest) = rest.split_at(len);
        let (data_crc, rest) = rest.split_at(4);
        if masked_crc32c(data) != u32::from_le_bytes(data_crc.try_into().expect("4 bytes")) {
            return Err(SummaryFault::DataCrc { record });
        }
        records.push(data);
        bytes = rest;
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(data: &[u8]) -> Vec<u8> {
        let len = (data.len() as u64).to_le_bytes();
        let mut out = len.to_vec();
        out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
        out
    }

    #[test]
    fn masked_crc_matches_tensorflow() {
        // crc32c("123456789") = 0xe3069283 (the CRC-32C check value), masked by hand:
        // rotr15 = 0x2507c60d, + 0xa282ead8 = 0xc78ab0e5.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc32c(b"123456789"), 0xc78a_b0e5);
        // Same as the framing tensorboard-rs writes.
        assert_eq!(
            masked_crc32c(b"123456789"),
            tensorboard_rs::masked_crc32c::masked_crc32c(b"123456789")
        );
    }

    #[test]
    fn parses_and_checks_frames() {
        let mut bytes = frame(b"abc");
        bytes.extend(frame(b""));
        assert_eq!(parse_records(&bytes).unwrap(), vec![&b"abc"[..], &b""[..]]);

        let mut corrupt = bytes.clone();
        corrupt[13] ^= 1;
        let message = |bytes: &[u8]| parse_records(bytes).unwrap_err().to_string();
        assert!(message(&corrupt).contains("data CRC"));
        let mut corrupt = bytes.clone();
        corrupt[0] ^= 1;
        assert!(message(&corrupt).contains("length CRC"));
    }

    #[test]
    fn a_torn_tail_ends_the_records_before_it() {
        let mut bytes = frame(b"abc");
        let first = bytes.len();
        bytes.extend(frame(b"defg"));
        // Cut inside the second record's header, data and data CRC.
        for cut in [
            first + 1,
            first + 11,
            first + 12,
            first + 14,
            bytes.len() - 1,
        ] {
            assert_eq!(
                parse_records(&bytes[..cut]).unwrap(),
                vec![&b"abc"[..]],
                "{cut}"
            );
        }
        assert_eq!(parse_records(&bytes[..5]).unwrap(), Vec::<&[u8]>::new());
        // A damaged record before the tail is still an error.
        let mut damaged = bytes[..bytes.len() - 1].to_vec();
        damaged[13] ^= 1;
        assert!(parse_records(&damaged)
            .unwrap_err()
            .to_string()
            .contains("data CRC"));
    }
}
