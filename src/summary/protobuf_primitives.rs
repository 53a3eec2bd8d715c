//! The few protobuf wire-format primitives the event messages need, encoding and decoding.

use super::fault::SummaryFault;

/// Wire type of varint fields (int64, enums).
const VARINT: u8 = 0;
/// Wire type of 8-byte fields (double).
const FIXED64: u8 = 1;
/// Wire type of length-delimited fields (string, bytes, messages, packed repeated).
const LEN: u8 = 2;
/// Wire type of 4-byte fields (float).
const FIXED32: u8 = 5;

/// Appends protobuf fields to a byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// The encoded bytes.
    pub(crate) fn finish(self) -> Vec<u8> {
        self.buf
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire_type));
    }

    /// A varint field (int64 as two's complement, like protobuf).
    pub(crate) fn int64(&mut self, field: u32, value: i64) {
        self.key(field, VARINT);
        self.varint(value as u64);
    }

    /// A double field.
    pub(crate) fn double(&mut self, field: u32, value: f64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// A float field.
    pub(crate) fn float(&mut self, field: u32, value: f32) {
        self.key(field, FIXED32);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// A length-delimited field: bytes, a string or an embedded message.
    pub(crate) fn bytes(&mut self, field: u32, value: &[u8]) {
        self.key(field, LEN);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    /// A packed repeated double field.
    pub(crate) fn packed_doubles(&mut self, field: u32, values: &[f64]) {
        self.key(field, LEN);
        self.varint((values.len() * 8) as u64);
        for value in values {
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }
}

/// One decoded field value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Field<'a> {
    /// A varint field.
    Varint(u64),
    /// An 8-byte field.
    Fixed64([u8; 8]),
    /// A length-delimited field.
    Len(&'a [u8]),
    /// A 4-byte field.
    Fixed32([u8; 4]),
}

impl Field<'_> {
    /// The field as a double, if it is one.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Field::Fixed64(b) => Some(f64::from_le_bytes(*b)),
            _ => None,
        }
    }
}

/// Iterates over the `(field number, value)` pairs of one encoded message.
pub(crate) struct Decoder<'a> {
    data: &'a [u8],
}

impl<'a> Decoder<'a> {
    /// A decoder over the encoded message `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Decoder { data }
    }

    fn varint(&mut self) -> Result<u64, SummaryFault> {
        let mut value = 0_u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .data
                .split_first()
                .ok_or(SummaryFault::TruncatedVarint)?;
            self.data = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(SummaryFault::VarintTooLong)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], SummaryFault> {
        if self.data.len() < n {
            return Err(SummaryFault::Truncated {
                needed: n,
                left: self.data.len(),
            });
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    /// The next field, `None` at the end, or why the bytes are not a valid message.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Field<'a>)>, SummaryFault> {
        if self.data.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field =
            u32::try_from(key >> 3).map_err(|_| SummaryFault::FieldNumber { number: key >> 3 })?;
        let value = match (key & 7) as u8 {
            VARINT => Field::Varint(self.varint()?),
            FIXED64 => Field::Fixed64(self.take(8)?.try_into().expect("8 bytes")),
            LEN => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| SummaryFault::FieldLength { len })?;
                Field::Len(self.take(len)?)
            }
            FIXED32 => Field::Fixed32(self.take(4)?.try_into().expect("4 bytes")),
            wire_type => return Err(SummaryFault::WireType { wire_type, field }),
        };
        Ok(Some((field, value)))
    }
}

/// Decodes a packed (or a single unpacked) repeated double field into `out`.
pub(crate) fn push_doubles(field: Field<'_>, out: &mut Vec<f64>) -> Result<(), SummaryFault> {
    match field {
        Field::Fixed64(b) => out.push(f64::from_le_bytes(b)),
        Field::Len(bytes) if bytes.len() % 8 == 0 => out.extend(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))),
        ),
        other => {
            return Err(SummaryFault::NotDoubles {
                found: format!("{other:?}"),
            })
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_known_bytes() {
        // Reference bytes from the protobuf encoding guide: field 1 varint 150 = 08 96 01.
        let mut e = Encoder::default();
        e.int64(1, 150);
        e.bytes(2, b"testing");
        e.float(3, 1.0);
        e.int64(4, -1);
        let bytes = e.finish();
        let mut expected = vec![0x08, 0x96, 0x01, 0x12, 0x07];
        expected.extend_from_slice(b"testing");
        expected.extend_from_slice(&[0x1d, 0x00, 0x00, 0x80, 0x3f]);
        expected.extend_from_slice(&[0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        expected.push(0x01);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn round_trips_every_field_kind() {
        let mut e = Encoder::default();
        e.int64(2, 1 << 40);
        e.double(1, -2.5);
        e.packed_doubles(6, &[1.0, f64::MAX]);
        e.float(2, 0.25);
        let bytes = e.finish();
        let mut d = Decoder::new(&bytes);
        assert_eq!(d.next_field().unwrap(), Some((2, Field::Varint(1 << 40))));
        let (n, f) = d.next_field().unwrap().unwrap();
        assert_eq!((n, f.as_f64()), (1, Some(-2.5)));
        let (n, f) = d.next_field().unwrap().unwrap();
        let mut doubles = Vec::new();
        push_doubles(f, &mut doubles).unwrap();
        assert_eq!((n, doubles), (6, vec![1.0, f64::MAX]));
        assert_eq!(
            d.next_field().unwrap(),
            Some((2, Field::Fixed32(0.25_f32.to_le_bytes())))
        );
        assert_eq!(d.next_field().unwrap(), None);
    }

    #[test]
    fn rejects_truncated_input() {
        assert!(Decoder::new(&[0x08]).next_field().is_err());
        assert!(Decoder::new(&[0x12, 0x05, b'a']).next_field().is_err());
        assert!(
            Decoder::new(&[0x0b]).next_field().is_err(),
            "group wire type"
        );
    }
}
