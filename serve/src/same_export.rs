//! Whether two export directories hold the same export: a copy of one export under a
//! second label, or one checkpoint that the latest and final exporters wrote under one
//! number before they shared a numbering. Their weight files can differ only in the order
//! of the safetensors header's members, so files are
//! compared by meaning: JSON as JSON, safetensors by header (as JSON) and data, anything
//! else byte for byte.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use serde_json::Value;

/// True when `a` and `b` hold the same files with the same contents.
pub(crate) fn same_export(a: &Path, b: &Path) -> io::Result<bool> {
    let (names_a, names_b) = (entries(a)?, entries(b)?);
    if names_a != names_b {
        return Ok(false);
    }
    for (name, is_dir) in names_a {
        let (file_a, file_b) = (a.join(&name), b.join(&name));
        let same = if is_dir {
            same_export(&file_a, &file_b)?
        } else {
            match Path::new(&name).extension().and_then(|e| e.to_str()) {
                Some("json") => same_json(&file_a, &file_b)?,
                Some("safetensors") => same_safetensors(&file_a, &file_b)?,
                _ => same_bytes(&mut reader(&file_a)?, &mut reader(&file_b)?)?,
            }
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The names in `dir`, sorted, each with whether it is a directory.
fn entries(dir: &Path) -> io::Result<Vec<(String, bool)>> {
    let mut names = std::fs::read_dir(dir)?
        .map(|entry| {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            Ok((name, entry.file_type()?.is_dir()))
        })
        .collect::<io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

fn reader(path: &Path) -> io::Result<BufReader<File>> {
    Ok(BufReader::with_capacity(1 << 16, File::open(path)?))
}

fn same_json(a: &Path, b: &Path) -> io::Result<bool> {
    let (bytes_a, bytes_b) = (std::fs::read(a)?, std::fs::read(b)?);
    Ok(
        match (
            serde_json::from_slice::<Value>(&bytes_a),
            serde_json::from_slice::<Value>(&bytes_b),
        ) {
            (Ok(json_a), Ok(json_b)) => json_a == json_b,
            _ => bytes_a == bytes_b,
        },
    )
}

/// A safetensors file: an 8-byte little-endian header length, the JSON header, the data.
fn same_safetensors(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut file_a, mut file_b) = (reader(a)?, reader(b)?);
    let (header_a, header_b) = (header(&mut file_a, a)?, header(&mut file_b, b)?);
    match (header_a, header_b) {
        (Some(header_a), Some(header_b)) if header_a == header_b => {
            same_bytes(&mut file_a, &mut file_b)
        }
        (Some(_), Some(_)) => Ok(false),
        // Not safetensors after all: the whole files decide.
        _ => same_bytes(&mut reader(a)?, &mut reader(b)?),
    }
}

/// The header of a safetensors file, or `None` if the file does not start with one.
fn header(file: &mut impl Read, path: &Path) -> io::Result<Option<Value>> {
    let mut length = [0u8; 8];
    if file.read_exact(&mut length).is_err() {
        return Ok(None);
    }
    let length = u64::from_le_bytes(length);
    if length > std::fs::metadata(path)?.len() {
        return Ok(None);
    }
    let mut text = Vec::new();
    file.take(length).read_to_end(&mut text)?;
    Ok(serde_json::from_slice(&text).ok())
}

fn same_bytes(a: &mut impl Read, b: &mut impl Read) -> io::Result<bool> {
    let (mut chunk_a, mut chunk_b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fill(a, &mut chunk_a)?;
        if fill(b, &mut chunk_b)? != n || chunk_a[..n] != chunk_b[..n] {
            return Ok(false);
        }
        if n < chunk_a.len() {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the end; how many bytes were read.
fn fill(from: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match from.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn exports_differing_only_in_member_order_are_the_same_and_any_other_change_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for (path, header, info) in [
            (
                &a,
                r#"{"__metadata__":{"format":"pt","step":"7"}}"#,
                r#"{"step": 7, "type": "x"}"#,
            ),
            (
                &b,
                r#"{"__metadata__":{"step":"7","format":"pt"}}"#,
                r#"{"type": "x", "step": 7}"#,
            ),
        ] {
            std::fs::create_dir_all(path).unwrap();
            std::fs::write(
                path.join("model.safetensors"),
                safetensors(header, &[1, 2, 3]),
            )
            .unwrap();
            std::fs::write(path.join("export.json"), info).unwrap();
            std::fs::write(path.join("vocab.txt"), "a\nb\n").unwrap();
        }
        assert!(same_export(&a, &b).unwrap());

        let weights = std::fs::read(b.join("model.safetensors")).unwrap();
        let mut changed = weights.clone();
        *changed.last_mut().unwrap() = 4;
        std::fs::write(b.join("model.safetensors"), &changed).unwrap();
        assert!(!same_export(&a, &b).unwrap());
        std::fs::write(b.join("model.safetensors"), &weights).unwrap();

        std::fs::write(b.join("export.json"), r#"{"type": "x", "step": 8}"#).unwrap();
        assert!(!same_export(&a, &b).unwrap());
        std::fs::write(b.join("export.json"), r#"{"type": "x", "step": 7}"#).unwrap();

        std::fs::write(b.join("vocab.txt"), "a\nc\n").unwrap();
        assert!(!same_export(&a, &b).unwrap());
        std::fs::write(b.join("vocab.txt"), "a\nb\n").unwrap();

        std::fs::write(b.join("extra.json"), "{}").unwrap();
        assert!(!same_export(&a, &b).unwrap());
    }
}
