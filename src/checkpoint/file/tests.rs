//! Tests of the checkpoint file format: round trips, and every kind of damage detected.

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
