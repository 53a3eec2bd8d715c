//! Whether input is UTF-8 text: the start of a file (a UTF-16 or UTF-32 byte-order mark,
//! NUL bytes) and single fields. Text in another encoding is refused rather than decoded
//! with replacement characters, which would merge distinct values into one.

use crate::Error;

/// How much of the start of a file is looked at for NUL bytes (as `git` does to tell
/// binary files from text).
pub(crate) const SNIFF: usize = 8000;

/// Why the start of a file, `head`, shows it is not UTF-8 text; `None` if it may be.
pub(crate) fn not_text(head: &[u8]) -> Option<String> {
    let head = &head[..head.len().min(SNIFF)];
    let marks: [(&[u8], &str); 4] = [
        (
            b"\xff\xfe\0\0",
            "UTF-32 LE text (byte-order mark FF FE 00 00)",
        ),
        (
            b"\0\0\xfe\xff",
            "UTF-32 BE text (byte-order mark 00 00 FE FF)",
        ),
        (b"\xff\xfe", "UTF-16 LE text (byte-order mark FF FE)"),
        (b"\xfe\xff", "UTF-16 BE text (byte-order mark FE FF)"),
    ];
    if let Some((_, what)) = marks.iter().find(|(mark, _)| head.starts_with(mark)) {
        return Some(format!("{what}, not UTF-8: re-encode it as UTF-8"));
    }
    let first = memchr::memchr(0, head)?;
    let nul_at = |parity: usize| {
        head.iter()
            .skip(parity)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count()
    };
    let (even, odd) = (nul_at(0), nul_at(1));
    let pairs = head.len() / 2;
    // ASCII in UTF-16 has a NUL in every other byte: the high byte, second in LE.
    let utf16 = if odd * 2 >= pairs && even * 8 <= odd {
        Some("LE")
    } else if even * 2 >= pairs && odd * 8 <= even {
        Some("BE")
    } else {
        None
    };
    Some(match utf16 {
        Some(order) => format!(
            "UTF-16 {order} text without a byte-order mark (every other byte is NUL), not \
             UTF-8: re-encode it as UTF-8"
        ),
        None => format!("binary data, not text (NUL byte at offset {first})"),
    })
}

/// `bytes` as text, or an [`Error::NotUtf8`] naming the file, line and field.
pub(crate) fn utf8<'a>(
    bytes: &'a [u8],
    file: &str,
    line: u64,
    column: Option<&str>,
    field: usize,
) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        Error::NotUtf8 {
            file: file.to_string(),
            line,
            column: column.map(str::to_string),
            field,
            byte: bytes[offset],
            offset,
            value: crate::error::excerpt(bytes),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_are_named() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"\xff\xfea\0,\0b\0",
                "UTF-16 LE text (byte-order mark FF FE)",
            ),
            (
                b"\xfe\xff\0a\0,\0b",
                "UTF-16 BE text (byte-order mark FE FF)",
            ),
            (
                b"\xff\xfe\0\0a\0\0\0",
                "UTF-32 LE text (byte-order mark FF FE 00 00)",
            ),
            (
                b"\0\0\xfe\xff\0\0\0a",
                "UTF-32 BE text (byte-order mark 00 00 FE FF)",
            ),
        ];
        for (head, what) in cases {
            let message = not_text(head).unwrap();
            assert!(message.starts_with(what), "{message}");
            assert!(message.ends_with("re-encode it as UTF-8"), "{message}");
        }
    }

    #[test]
    fn nul_bytes_tell_utf16_without_a_mark_from_binary_data() {
        let le: Vec<u8> = "a,b\n1,2\n".bytes().flat_map(|b| [b, 0]).collect();
        let be: Vec<u8> = "a,b\n1,2\n".bytes().flat_map(|b| [0, b]).collect();
        assert!(not_text(&le).unwrap().starts_with("UTF-16 LE text without"));
        assert!(not_text(&be).unwrap().starts_with("UTF-16 BE text without"));
        assert_eq!(
            not_text(b"a,b\n1,\0\xff\x03\n").unwrap(),
            "binary data, not text (NUL byte at offset 6)"
        );
        assert_eq!(
            not_text(&[0; 100]).unwrap(),
            "binary data, not text (NUL byte at offset 0)"
        );
    }

    #[test]
    fn text_passes() {
        assert_eq!(not_text(b""), None);
        assert_eq!(not_text(b"a,b\n1,2\n"), None);
        assert_eq!(not_text("\u{feff}caf\u{e9},x\n".as_bytes()), None);
        assert_eq!(
            not_text(b"r\xe9d,x\n"),
            None,
            "found per field, with its line"
        );
        let mut late_nul = vec![b'x'; SNIFF];
        late_nul.push(0);
        assert_eq!(not_text(&late_nul), None);
    }

    #[test]
    fn latin1_field_is_named_with_byte_and_offset() {
        assert_eq!(
            utf8("caf\u{e9}".as_bytes(), "f", 1, None, 1).unwrap(),
            "caf\u{e9}"
        );
        let e = utf8(b"r\xe9d", "colours.csv", 3, Some("colour"), 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "colours.csv:3: field 'colour' (column 2) is not valid UTF-8: byte 0xE9 at offset 1 \
             of 'r\u{fffd}d'; the file looks like Latin-1/Windows-1252 or another 8-bit \
             encoding: re-encode it as UTF-8"
        );
        let e = utf8(b"na\xefve", "h.csv", 1, None, 4).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("h.csv:1: header field 4 is not valid UTF-8: byte 0xEF at offset 2"),
            "{e}"
        );
    }
}
