//! Parsing single cells of text into typed values (shared by CSV reading and defaults).

use crate::{Column, ColumnType, Error};

/// Strips ASCII whitespace from both ends.
pub(crate) fn trim(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

/// Parses a float, tolerating surrounding whitespace. `None` if it is not a number.
#[inline]
pub(crate) fn parse_f32(bytes: &[u8]) -> Option<f32> {
    match fast_float2::parse::<f32, _>(bytes) {
        Ok(v) => Some(v),
        Err(_) => {
            let t = trim(bytes);
            if t.len() == bytes.len() || t.is_empty() {
                None
            } else {
                fast_float2::parse::<f32, _>(t).ok()
            }
        }
    }
}

/// Parses an integer, tolerating surrounding whitespace and a leading `+`.
pub(crate) fn parse_i64(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(trim(bytes)).ok()?.parse().ok()
}

/// Parses a class id: an integer in `0..=u32::MAX`.
pub(crate) fn parse_class(bytes: &[u8]) -> Option<u32> {
    std::str::from_utf8(trim(bytes)).ok()?.parse().ok()
}

/// A category value: the trimmed text (invalid UTF-8 replaced).
pub(crate) fn parse_category(bytes: &[u8]) -> String {
    let t = trim(bytes);
    match std::str::from_utf8(t) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(t).into_owned(),
    }
}

/// What a type is called in "cannot parse 'x' as ..." messages.
pub(crate) fn expected_name(kind: ColumnType, is_label: bool) -> &'static str {
    match (kind, is_label) {
        (ColumnType::Float, _) => "float",
        (ColumnType::Int, false) => "int",
        (ColumnType::Int, true) => "class id (integer >= 0)",
        (ColumnType::Category, _) => "category",
    }
}

/// Whether `text` parses as the type of `column`.
pub(crate) fn parses_as(kind: ColumnType, is_label: bool, text: &[u8]) -> bool {
    match (kind, is_label) {
        (ColumnType::Float, _) => parse_f32(text).is_some(),
        (ColumnType::Int, false) => parse_i64(text).is_some(),
        (ColumnType::Int, true) => parse_class(text).is_some(),
        (ColumnType::Category, _) => !trim(text).is_empty() || !is_label,
    }
}

/// Checks that a column's default parses as the column's type.
pub(crate) fn check_default(column: &Column, default: &str, is_label: bool) -> Result<(), Error> {
    if parses_as(column.kind, is_label, default.as_bytes()) {
        Ok(())
    } else {
        Err(Error::Schema(format!(
            "column {}: default '{default}' is not a valid {}",
            column.name,
            expected_name(column.kind, is_label)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats() {
        assert_eq!(parse_f32(b"1.5"), Some(1.5));
        assert_eq!(parse_f32(b"-2e3"), Some(-2000.0));
        assert_eq!(parse_f32(b" 7 "), Some(7.0));
        assert_eq!(parse_f32(b"1.5x"), None);
        assert_eq!(parse_f32(b""), None);
        assert_eq!(parse_f32(b"  "), None);
        assert_eq!(parse_f32(b"abc"), None);
    }

    #[test]
    fn ints_and_classes() {
        assert_eq!(parse_i64(b"-3"), Some(-3));
        assert_eq!(parse_i64(b"3.5"), None);
        assert_eq!(parse_class(b" 2"), Some(2));
        assert_eq!(parse_class(b"-1"), None);
    }

    #[test]
    fn categories_and_defaults() {
        assert_eq!(parse_category(b" red "), "red");
        assert_eq!(parse_category(&[0xff, b'a']), "\u{fffd}a");
        let col = Column {
            name: "x".into(),
            kind: ColumnType::Int,
            default: None,
        };
        assert!(check_default(&col, "4", false).is_ok());
        assert!(check_default(&col, "-4", true).is_err());
        let err = check_default(&col, "z", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "schema: column x: default 'z' is not a valid int"
        );
    }
}
