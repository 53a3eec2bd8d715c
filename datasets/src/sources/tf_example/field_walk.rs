//! Protobuf's wire format, walked in place: the fields of a message as slices of the
//! record, so that a tf.Example's values are copied once, straight into their columns
//! (TensorFlow's `parse_example` walks the bytes the same way, in
//! `example_proto_fast_parsing.cc`, rather than building the message).

/// A field's value as it sits on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1: eight bytes.
    Fixed64,
    /// Wire type 2: a string, bytes, a message or a packed list.
    Len(&'a [u8]),
    /// Wire type 5: four bytes, little-endian.
    Fixed32([u8; 4]),
}

/// What is wrong with the bytes of a serialized message.
pub type WireError = &'static str;

/// The fields of a message, in order: `(offset of the field in the message, field
/// number, value)`. An error ends the iteration.
#[derive(Clone)]
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0 }
    }

    /// The fields from `offset` on (a field's start, as this iterator gave it).
    pub(crate) fn from_offset(buf: &'a [u8], offset: usize) -> Self {
        Fields { buf, pos: offset }
    }

    fn field(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let key = varint(self.buf, &mut self.pos)?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err("a field number out of range");
        }
        let value = match key & 7 {
            0 => Value::Varint(varint(self.buf, &mut self.pos)?),
            1 => {
                take(self.buf, &mut self.pos, 8)?;
                Value::Fixed64
            }
            2 => {
                let len = varint(self.buf, &mut self.pos)?;
                let len = usize::try_from(len).map_err(|_| "a length past the end")?;
                Value::Len(take(self.buf, &mut self.pos, len)?)
            }
            5 => {
                let bytes = take(self.buf, &mut self.pos, 4)?;
                Value::Fixed32([bytes[0], bytes[1], bytes[2], bytes[3]])
            }
            3 | 4 => return Err("a group (wire types 3 and 4 are not used by tf.Example)"),
            _ => return Err("a wire type that does not exist (6 or 7)"),
        };
        Ok((number as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(usize, u32, Value<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        match self.field() {
            Ok((number, value)) => Some(Ok((start, number, value))),
            Err(e) => {
                self.pos = self.buf.len();
                Some(Err(e))
            }
        }
    }
}

/// The next `len` bytes from `pos`.
fn take<'a>(buf: &'a [u8], pos: &mut usize, len: usize) -> Result<&'a [u8], WireError> {
    let end = pos
        .checked_add(len)
        .filter(|end| *end <= buf.len())
        .ok_or("a length past the end")?;
    let bytes = &buf[*pos..end];
    *pos = end;
    Ok(bytes)
}

/// A base-128 varint at `pos`, at most ten bytes.
pub(crate) fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&byte) = buf.get(*pos) else {
            return Err("a varint cut off by the end");
        };
        *pos += 1;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            // The tenth byte holds the top bit of a u64 alone; more would overflow it, and
            // protobuf's decoders (prost's too) refuse such a varint.
            if i == 9 && byte > 1 {
                return Err("a varint beyond 64 bits");
            }
            return Ok(value);
        }
    }
    Err("a varint longer than ten bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_varint_of_ten_bytes_reaches_the_top_bit() {
        let top = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint(&top, &mut 0), Ok(u64::MAX));
    }

    #[test]
    fn fields_of_each_wire_type() {
        // 1: varint 300, 2: "hi", 3: fixed32, 4: fixed64.
        let bytes = [
            0x08, 0xac, 0x02, 0x12, 0x02, b'h', b'i', 0x1d, 1, 2, 3, 4, 0x21, 0, 0, 0, 0, 0, 0, 0,
            0,
        ];
        let fields: Vec<_> = Fields::new(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            fields,
            [
                (0, 1, Value::Varint(300)),
                (3, 2, Value::Len(b"hi")),
                (7, 3, Value::Fixed32([1, 2, 3, 4])),
                (12, 4, Value::Fixed64),
            ]
        );
        let from: Vec<_> = Fields::from_offset(&bytes, 7)
            .map(|f| f.unwrap().1)
            .collect();
        assert_eq!(from, [3, 4]);
    }

    #[test]
    fn malformed_bytes_are_errors_that_end_the_walk() {
        for (bytes, want) in [
            (&[0x12, 0x05, b'a'][..], "a length past the end"),
            (&[0x08, 0x80][..], "a varint cut off by the end"),
            (
                &[0x0b][..],
                "a group (wire types 3 and 4 are not used by tf.Example)",
            ),
            (&[0x0e][..], "a wire type that does not exist (6 or 7)"),
            (&[0x00, 0x00][..], "a field number out of range"),
            (
                &[
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                ][..],
                "a varint longer than ten bytes",
            ),
            (
                &[
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
                ][..],
                "a varint beyond 64 bits",
            ),
        ] {
            let mut fields = Fields::new(bytes);
            assert_eq!(fields.next(), Some(Err(want)), "{bytes:?}");
            assert_eq!(fields.next(), None);
        }
    }
}
