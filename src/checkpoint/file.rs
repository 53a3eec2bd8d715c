//! The checkpoint file format: magic, checksummed JSON header, raw checksummed sections.
//!
//! ```text
//! offset 0    8 bytes   magic b"ESTCKPT1"
//! offset 8    8 bytes   header length H, u64 little-endian
//! offset 16   4 bytes   crc32c of the header bytes, u32 little-endian
//! offset 20   H bytes   header, compact JSON:
//!                       {"format_version":1,"global_step":N,"meta":{..},
//!                        "sections":[{"name":"model","len":L,"crc32c":C},..]}
//! then        the sections' raw bytes, back to back, in header order (sorted by name);
//!             nothing after the last one.
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The 8 bytes every checkpoint file starts with.
pub const MAGIC: &[u8; 8] = b"ESTCKPT1";

/// The header's `format_version` this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes before the header: magic, header length, header crc32c.
const PREAMBLE_LEN: usize = MAGIC.len() + 8 + 4;

/// One training checkpoint: the global step, caller-defined metadata and opaque byte sections.
#[derive(Clone, Default, PartialEq)]
pub struct Checkpoint {
    /// The global step the checkpoint was taken at.
    pub global_step: u64,
    /// Caller-defined metadata (input position, optimizer kind, tensor manifest, ...).
    pub meta: serde_json::Value,
    /// Named opaque payloads (e.g. `model`, `optimizer`), each checksummed separately.
    pub sections: BTreeMap<String, Vec<u8>>,
}

#[derive(Serialize, Deserialize)]
struct SectionEntry {
    name: String,
    len: u64,
    crc32c: u32,
}

#[derive(Serialize)]
struct HeaderOut<'a> {
    format_version: u32,
    global_step: u64,
    meta: &'a serde_json::Value,
    sections: Vec<SectionEntry>,
}

#[derive(Deserialize)]
struct HeaderVersion {
    format_version: u32,
}

#[derive(Deserialize)]
struct HeaderIn {
    global_step: u64,
    #[serde(default)]
    meta: serde_json::Value,
    sections: Vec<SectionEntry>,
}

impl Checkpoint {
    /// A checkpoint at `global_step` with `meta` and no sections yet.
    pub fn new(global_step: u64, meta: serde_json::Value) -> Self {
        Checkpoint {
            global_step,
            meta,
            sections: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the section `name`, builder style.
    pub fn with_section(mut self, name: impl Into<String>, bytes: Vec<u8>) -> Self {
        self.sections.insert(name.into(), bytes);
        self
    }

    /// The bytes of section `name`, if present.
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.sections.get(name).map(Vec::as_slice)
    }

    /// Serialises the checkpoint; the same checkpoint always gives the same bytes.
    pub fn encode(&self) -> Vec<u8> {
        let sections = self
            .sections
            .iter()
            .map(|(name, bytes)| SectionEntry {
                name: name.clone(),
                len: bytes.len() as u64,
                crc32c: crc32c::crc32c(bytes),
            })
            .collect();
        let header = HeaderOut {
            format_version: FORMAT_VERSION,
            global_step: self.global_step,
            meta: &self.meta,
            sections,
        };
        // Plain structs and a `Value` (string keys only) cannot fail to serialise.
        let header = serde_json::to_vec(&header).expect("checkpoint header serialises to JSON");
        let body: usize = self.sections.values().map(Vec::len).sum();
        let mut out = Vec::with_capacity(PREAMBLE_LEN + header.len() + body);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(&header).to_le_bytes());
        out.extend_from_slice(&header);
        for bytes in self.sections.values() {
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Parses and verifies checkpoint `bytes`; errors name `path` and the faulty part.
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<Checkpoint> {
        let err = |message: String| Error::checkpoint(path, message);
        let size = bytes.len();
        if !bytes.starts_with(MAGIC) {
            return Err(err(if MAGIC.starts_with(bytes) {
                format!("file is truncated ({size} bytes, no complete magic; half-written?)")
            } else {
                "not a checkpoint file (bad magic bytes)".to_string()
            }));
        }
        if size < PREAMBLE_LEN {
            return Err(err(format!(
                "file is truncated ({size} bytes, header length missing; half-written?)"
            )));
        }
        let header_len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let header_crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
        let header_end = usize::try_from(header_len)
            .ok()
            .and_then(|len| PREAMBLE_LEN.checked_add(len))
            .filter(|&end| end <= size)
            .ok_or_else(|| {
                err(format!(
                    "file is truncated ({size} bytes, header of {header_len} bytes does not fit; \
                     half-written?)"
                ))
            })?;
        let header = &bytes[PREAMBLE_LEN..header_end];
        if crc32c::crc32c(header) != header_crc {
            return Err(err(
                "header checksum mismatch (file is corrupt or half-written)".to_string(),
            ));
        }
        let version: HeaderVersion =
            serde_json::from_slice(header).map_err(|e| err(format!("bad header: {e}")))?;
        if version.format_version != FORMAT_VERSION {
            return Err(err(format!(
                "unsupported format version {} (this build reads version {FORMAT_VERSION})",
                version.format_version
            )));
        }
        let header: HeaderIn =
            serde_json::from_slice(header).map_err(|e| err(format!("bad header: {e}")))?;

        let mut sections = BTreeMap::new();
        let mut offset = header_end;
        for entry in header.sections {
            let name = entry.name;
            let end = usize::try_from(entry.len)
                .ok()
                .and_then(|len| offset.checked_add(len))
                .filter(|&end| end <= size)
                .ok_or_else(|| {
                    err(format!(
                        "section '{name}' is truncated ({} bytes expected, {} present; \
                         half-written?)",
                        entry.len,
                        size - offset
                    ))
                })?;
            let data = &bytes[offset..end];
            if crc32c::crc32c(data) != entry.crc32c {
                return Err(err(format!(
                    "section '{name}' checksum mismatch (file is corrupt or half-written)"
                )));
            }
            if sections.contains_key(&name) {
                return Err(err(format!("bad header: section '{name}' appears twice")));
            }
            sections.insert(name, data.to_vec());
            offset = end;
        }
        if offset != size {
            return Err(err(format!(
                "{} unexpected bytes after the last section (file is corrupt)",
                size - offset
            )));
        }
        Ok(Checkpoint {
            global_step: header.global_step,
            meta: header.meta,
            sections,
        })
    }
}

impl fmt::Debug for Checkpoint {
    /// Shows section sizes rather than their (possibly huge) contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: BTreeMap<&str, usize> = self
            .sections
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.len()))
            .collect();
        f.debug_struct("Checkpoint")
            .field("global_step", &self.global_step)
            .field("meta", &self.meta)
            .field("section_bytes", &sizes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Checkpoint {
        Checkpoint::new(
            200,
            json!({"optimizer": "adam", "input": {"epoch": 3, "offset": 1234}, "lr": 0.001}),
        )
        .with_section("model", (0..=255u8).cycle().take(10_000).collect())
        .with_section("optimizer", vec![7; 333])
        .with_section("empty", Vec::new())
    }

    fn path() -> &'static Path {
        Path::new("model_dir/ckpt-200.ckpt")
    }

    fn decode_err(bytes: &[u8]) -> String {
        match Checkpoint::decode(path(), bytes) {
            Ok(c) => panic!("decoded a bad file: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Byte offset of section `name` in `sample().encode()`.
    fn section_offset(ckpt: &Checkpoint, bytes: &[u8], name: &str) -> usize {
        let header_len = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
        let before: usize = ckpt
            .sections
            .iter()
            .take_while(|(n, _)| n.as_str() < name)
            .map(|(_, b)| b.len())
            .sum();
        PREAMBLE_LEN + header_len + before
    }

    #[test]
    fn round_trip() {
        let ckpt = sample();
        let bytes = ckpt.encode();
        assert!(bytes.starts_with(MAGIC));
        let back = Checkpoint::decode(path(), &bytes).unwrap();
        assert_eq!(back, ckpt);
        assert_eq!(back.section("optimizer"), Some(&[7u8; 333][..]));
        assert_eq!(back.section("empty"), Some(&[][..]));
        assert_eq!(back.section("missing"), None);
    }

    #[test]
    fn round_trip_without_sections_or_meta() {
        let ckpt = Checkpoint::new(0, serde_json::Value::Null);
        assert_eq!(Checkpoint::decode(path(), &ckpt.encode()).unwrap(), ckpt);
    }

    #[test]
    fn encoding_is_deterministic() {
        assert_eq!(sample().encode(), sample().encode());
        // Insertion order of sections and meta keys does not matter.
        let mut other = Checkpoint::new(
            200,
            json!({"lr": 0.001, "input": {"offset": 1234, "epoch": 3}, "optimizer": "adam"}),
        );
        for (name, bytes) in sample().sections.into_iter().rev() {
            other.sections.insert(name, bytes);
        }
        assert_eq!(other.encode(), sample().encode());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            let msg = decode_err(&bytes[..len]);
            assert!(
                msg.starts_with("checkpoint model_dir/ckpt-200.ckpt: "),
                "{msg}"
            );
            assert!(
                msg.contains("truncated") || msg.contains("bad header"),
                "len {len}: {msg}"
            );
        }
    }

    #[test]
    fn truncated_section_is_named() {
        let bytes = sample().encode();
        let msg = decode_err(&bytes[..bytes.len() - 10]);
        assert!(msg.contains("section 'optimizer' is truncated"), "{msg}");
    }

    #[test]
    fn flipped_byte_in_section_is_named() {
        let ckpt = sample();
        let mut bytes = ckpt.encode();
        let at = section_offset(&ckpt, &bytes, "optimizer") + 100;
        bytes[at] ^= 0x01;
        assert_eq!(
            decode_err(&bytes),
            "checkpoint model_dir/ckpt-200.ckpt: section 'optimizer' checksum mismatch \
             (file is corrupt or half-written)"
        );
        let mut bytes = ckpt.encode();
        let at = section_offset(&ckpt, &bytes, "model");
        bytes[at] ^= 0x80;
        assert!(decode_err(&bytes).contains("section 'model' checksum mismatch"));
    }

    #[test]
    fn every_single_bit_flip_is_an_error() {
        let ckpt = Checkpoint::new(5, json!({"k": [1, 2]})).with_section("s", vec![1, 2, 3]);
        let bytes = ckpt.encode();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    Checkpoint::decode(path(), &bad).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode_err(b"").contains("truncated"));
        assert!(decode_err(b"ESTC").contains("truncated"));
        assert!(decode_err(b"PK\x03\x04 not a checkpoint").contains("bad magic"));
        assert!(decode_err(&[0xff; 4096]).contains("bad magic"));

        // Valid magic and checksum around a header that is not the expected JSON.
        for header in [
            &b"{not json"[..],
            b"[]",
            b"{\"format_version\":1}",
            b"\xff\xfe",
        ] {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
            bytes.extend_from_slice(&crc32c::crc32c(header).to_le_bytes());
            bytes.extend_from_slice(header);
            assert!(decode_err(&bytes).contains("bad header"), "{header:?}");
        }

        // A header length far beyond the file, including one that overflows usize arithmetic.
        for len in [1_000_000u64, u64::MAX] {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(&[0; 64]);
            assert!(decode_err(&bytes).contains("truncated"));
        }
    }

    #[test]
    fn header_damage_and_version_and_trailing_bytes_are_errors() {
        let mut bytes = sample().encode();
        bytes[PREAMBLE_LEN + 3] ^= 0x20;
        assert!(decode_err(&bytes).contains("header checksum mismatch"));

        let header = br#"{"format_version":2,"global_step":1,"sections":[]}"#;
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32c::crc32c(header).to_le_bytes());
        bytes.extend_from_slice(header);
        assert!(decode_err(&bytes).contains("unsupported format version 2"));

        let mut bytes = sample().encode();
        bytes.extend_from_slice(b"extra");
        assert!(decode_err(&bytes).contains("5 unexpected bytes after the last section"));
    }

    #[test]
    fn duplicate_section_is_an_error() {
        let header = br#"{"format_version":1,"global_step":1,"sections":[
            {"name":"a","len":0,"crc32c":0},{"name":"a","len":0,"crc32c":0}]}"#;
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&crc32c::crc32c(header).to_le_bytes());
        bytes.extend_from_slice(header);
        assert!(decode_err(&bytes).contains("section 'a' appears twice"));
    }

    #[test]
    fn debug_shows_sizes_not_bytes() {
        let text = format!("{:?}", sample());
        assert!(text.contains("\"model\": 10000"), "{text}");
        assert!(text.len() < 500);
    }
}
