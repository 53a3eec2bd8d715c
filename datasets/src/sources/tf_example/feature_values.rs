//! [`FeatureValues`]: a Feature's value lists as they lie in a serialized tf.Example, which
//! kind it holds and each value, read in place.

use super::field_walk::{varint, Fields, Value, WireError};
use super::spec::DType;

/// The three lists a Feature may hold, by field number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `bytes_list`.
    Bytes = 1,
    /// `float_list`.
    Float = 2,
    /// `int64_list`.
    Int64 = 3,
}

impl ListKind {
    pub(crate) fn of(dtype: DType) -> Self {
        match dtype {
            DType::Float32 => ListKind::Float,
            DType::Int64 => ListKind::Int64,
            DType::String => ListKind::Bytes,
        }
    }

    /// What a feature of this kind holds, for messages.
    pub(crate) fn holds(self) -> &'static str {
        match self {
            ListKind::Bytes => "string values (bytes_list)",
            ListKind::Float => "float32 values (float_list)",
            ListKind::Int64 => "int64 values (int64_list)",
        }
    }
}

/// The values of one feature of a serialized tf.Example, from its map entry (as
/// [`FeatureLocator`](super::FeatureLocator) finds it), read where they lie.
///
/// Protobuf merges a Feature given twice, so the values are every list of the kind set last,
/// from where that kind was set, as prost's decoding has them. Where the entry holds more
/// than one list, each reading method walks it again (one list is read where it was found);
/// a malformed list is an error (`WireError`, or the caller's `E` made from it).
#[derive(Clone, Copy, Debug)]
pub struct FeatureValues<'a> {
    entry: &'a [u8],
    kind: ListKind,
    /// Offset in `entry` of the value field where the kind was set.
    at: usize,
    /// Offset in that value of the list field that set it.
    within: usize,
    /// List fields in all the entry's values, of any kind.
    lists: usize,
    /// The list, when there is one: read without walking the entry again.
    only: &'a [u8],
}

impl<'a> FeatureValues<'a> {
    /// The values of map entry `entry`; `None` if its Feature sets no list (an absent
    /// feature, to TensorFlow).
    pub fn of(entry: &'a [u8]) -> Result<Option<Self>, WireError> {
        let mut found: Option<(ListKind, usize, usize)> = None;
        let (mut lists, mut only) = (0, &[][..]);
        for field in Fields::new(entry) {
            let (at, number, value) = field?;
            if number != 2 {
                continue;
            }
            let Value::Len(feature) = value else {
                return Err("a feature's value is not length-delimited");
            };
            for field in Fields::new(feature) {
                let (within, number, value) = field?;
                let kind = match number {
                    1 => ListKind::Bytes,
                    2 => ListKind::Float,
                    3 => ListKind::Int64,
                    _ => continue,
                };
                let Value::Len(list) = value else {
                    return Err("a value list is not length-delimited");
                };
                (lists, only) = (lists + 1, list);
                if found.map(|f| f.0) != Some(kind) {
                    found = Some((kind, at, within));
                }
            }
        }
        Ok(found.map(|(kind, at, within)| FeatureValues {
            entry,
            kind,
            at,
            within,
            lists,
            only,
        }))
    }

    /// The kind of list the feature holds.
    pub fn kind(&self) -> ListKind {
        self.kind
    }

    /// How many lists the entry holds, of any kind: more than one only where a Feature was
    /// given twice or set twice, and protobuf merged them (the values read are then those
    /// of the last kind, and lists of other kinds are not read at all).
    pub fn lists(&self) -> usize {
        self.lists
    }

    /// Calls `f` with each list message, in order.
    fn each<E: From<WireError>>(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.lists == 1 {
            return f(self.only);
        }
        for field in Fields::from_offset(self.entry, self.at) {
            let (offset, number, value) = field?;
            let (2, Value::Len(feature)) = (number, value) else {
                continue;
            };
            let from = if offset == self.at { self.within } else { 0 };
            for field in Fields::from_offset(feature, from) {
                if let (_, number, Value::Len(list)) = field? {
                    if number == self.kind as u32 {
                        f(list)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Every float value, in order, as runs of little-endian 4-byte values (a whole number
    /// of them); nothing unless the kind is [`ListKind::Float`].
    pub fn floats<E: From<WireError>>(&self, mut f: impl FnMut(&[u8])) -> Result<(), E> {
        if self.kind != ListKind::Float {
            return Ok(());
        }
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(packed)) if packed.len() % 4 == 0 => f(packed),
                    (_, 1, Value::Len(_)) => {
                        return Err(E::from("packed floats whose length is not a multiple of 4"))
                    }
                    (_, 1, Value::Fixed32(bytes)) => f(&bytes),
                    (_, 1, _) => return Err(E::from("float values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every int64 value, in order; nothing unless the kind is [`ListKind::Int64`].
    pub fn ints<E: From<WireError>>(
        &self,
        mut f: impl FnMut(i64) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.kind != ListKind::Int64 {
            return Ok(());
        }
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(packed)) => {
                        let mut pos = 0;
                        while pos < packed.len() {
                            f(varint(packed, &mut pos)? as i64)?;
                        }
                    }
                    (_, 1, Value::Varint(v)) => f(v as i64)?,
                    (_, 1, _) => return Err(E::from("int64 values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every bytes value, in order; nothing unless the kind is [`ListKind::Bytes`].
    pub fn bytes<E: From<WireError>>(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.kind != ListKind::Bytes {
            return Ok(());
        }
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(bytes)) => f(bytes)?,
                    (_, 1, _) => return Err(E::from("bytes values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }
}
