//! Parsing single cells of text into typed values (shared by CSV reading and defaults).

use crate::{Column, ColumnType, Error};

/// Strips ASCII whitespace from both ends.
pub(crate) fn trim(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

/// Exact powers of ten in `f32` (`10^10 = 2^10 * 5^10` and `5^10 < 2^24`).
const POW10: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// Parses a plain decimal (`-12.345`, no exponent) at the start of `s`, returning the value
/// and the number of bytes used; `None` when the fast path does not apply (then use
/// [`parse_f32`] on the whole field).
///
/// The result is correctly rounded: the digits form an integer `m <= 2^24` and the scale
/// is `10^k` with `k <= 10`, both exact in `f32`, so the one division rounds once
/// (Clinger's fast path).
#[inline]
pub(crate) fn parse_decimal_prefix(s: &[u8]) -> Option<(f32, usize)> {
    let mut i = 0;
    let negative = match s.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut m: u64 = 0;
    let mut digits = 0u32;
    while let Some(&c) = s.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        digits += 1;
        i += 1;
    }
    let mut scale = 0u32;
    if s.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c) = s.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
            scale += 1;
            i += 1;
        }
    }
    let total = digits + scale;
    if total == 0 || total > 18 || scale > 10 || m > 1 << 24 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        return None;
    }
    let v = m as f32 / POW10[scale as usize];
    Some((if negative { -v } else { v }, i))
}

/// Parses a float, tolerating surrounding whitespace. `None` if it is not a finite number:
/// NaN and infinities in data are refused (they would turn normalisers and metrics into
/// NaN or made-up numbers far from the row that caused them).
#[inline]
pub(crate) fn parse_f32(bytes: &[u8]) -> Option<f32> {
    if let Some((v, used)) = parse_decimal_prefix(bytes) {
        if used == bytes.len() {
            return Some(v);
        }
    }
    let parsed = match fast_float2::parse::<f32, _>(bytes) {
        Ok(v) => Some(v),
        Err(_) => {
            let t = trim(bytes);
            if t.len() == bytes.len() || t.is_empty() {
                None
            } else {
                fast_float2::parse::<f32, _>(t).ok()
            }
        }
    };
    parsed.filter(|v| v.is_finite())
}

/// Parses an integer, tolerating surrounding whitespace and a leading `+`.
pub(crate) fn parse_i64(bytes: &[u8]) -> Option<i64> {
    std::str::from_utf8(trim(bytes)).ok()?.parse().ok()
}

/// Parses a class id: an integer in `0..=u32::MAX`.
pub(crate) fn parse_class(bytes: &[u8]) -> Option<u32> {
    std::str::from_utf8(trim(bytes)).ok()?.parse().ok()
}

/// What a type is called in "cannot parse 'x' as ..." messages.
pub(crate) fn expected_name(kind: ColumnType, is_label: bool) -> &'static str {
    match (kind, is_label) {
        (ColumnType::Float, _) => "float (finite)",
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

// The check lives with the parsers it runs, so that the schema's types import no parser.
impl Column {
    /// Checks that the column's default parses as the column's type.
    pub(crate) fn check_default(&self, default: &str, is_label: bool) -> Result<(), Error> {
        if parses_as(self.kind, is_label, default.as_bytes()) {
            Ok(())
        } else {
            Err(Error::Schema(format!(
                "column {}: default '{default}' is not a valid {}",
                self.name,
                expected_name(self.kind, is_label)
            )))
        }
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
    fn decimal_fast_path_is_exact() {
        assert_eq!(parse_decimal_prefix(b"-37.1234,"), Some((-37.1234, 8)));
        assert_eq!(parse_decimal_prefix(b"1."), Some((1.0, 2)));
        assert_eq!(parse_decimal_prefix(b".5"), Some((0.5, 2)));
        assert_eq!(parse_decimal_prefix(b"+3"), Some((3.0, 2)));
        assert_eq!(parse_decimal_prefix(b"1e5"), None);
        assert_eq!(parse_decimal_prefix(b"."), None);
        assert_eq!(parse_decimal_prefix(b"-"), None);
        assert_eq!(parse_decimal_prefix(b"123456789012345678901234"), None);
        assert_eq!(parse_decimal_prefix(b"16777217"), None);
        let mut rng = crate::SplitMix64::new(9);
        for _ in 0..200_000 {
            let decimals = rng.below(8);
            let magnitude = 10f64.powi(rng.below(9) as i32 - 3);
            let x = (rng.next_f64() - 0.5) * magnitude;
            let text = format!("{x:.decimals$}");
            let expected: f32 = text.parse().unwrap();
            assert_eq!(parse_f32(text.as_bytes()), Some(expected), "{text}");
            if let Some((v, used)) = parse_decimal_prefix(text.as_bytes()) {
                assert_eq!((v, used), (expected, text.len()), "{text}");
            }
        }
        assert_eq!(parse_f32(b"1e-3"), Some(1e-3));
        for non_finite in ["nan", "NaN", "inf", "-inf", "1e39"] {
            assert_eq!(parse_f32(non_finite.as_bytes()), None, "{non_finite}");
        }
    }

    #[test]
    fn ints_and_classes() {
        assert_eq!(parse_i64(b"-3"), Some(-3));
        assert_eq!(parse_i64(b"3.5"), None);
        assert_eq!(parse_class(b" 2"), Some(2));
        assert_eq!(parse_class(b"-1"), None);
    }

    #[test]
    fn defaults() {
        let col = Column {
            name: "x".into(),
            kind: ColumnType::Int,
            default: None,
        };
        assert!(col.check_default("4", false).is_ok());
        assert!(col.check_default("-4", true).is_err());
        let err = col.check_default("z", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "schema: column x: default 'z' is not a valid int"
        );
    }
}
