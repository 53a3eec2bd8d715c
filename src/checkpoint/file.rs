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
mod properties;
#[cfg(test)]
mod tests;
