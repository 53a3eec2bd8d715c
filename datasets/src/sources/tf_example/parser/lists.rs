//! A Feature's value lists as they lie in a tf.Example record: which kind it holds and
//! each value, read in place.

use super::super::field_walk::{varint, Fields, Value, WireError};
use super::super::spec::DType;
use super::row_fault::RowFault;

/// The three lists a Feature may hold, by field number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListKind {
    Bytes = 1,
    Float = 2,
    Int64 = 3,
}

impl ListKind {
    pub(super) fn of(dtype: DType) -> Self {
        match dtype {
            DType::Float32 => ListKind::Float,
            DType::Int64 => ListKind::Int64,
            DType::String => ListKind::Bytes,
        }
    }

    /// What a feature of this kind holds, for messages.
    pub(super) fn holds(self) -> &'static str {
        match self {
            ListKind::Bytes => "string values (bytes_list)",
            ListKind::Float => "float32 values (float_list)",
            ListKind::Int64 => "int64 values (int64_list)",
        }
    }
}

/// The lists of a feature's final kind: protobuf merges a Feature given twice, so its
/// values are every list of the kind set last, from where that kind was set.
pub(super) struct Lists<'a> {
    pub(super) entry: &'a [u8],
    pub(super) kind: ListKind,
    /// Offset in `entry` of the value field where the kind was set.
    pub(super) at: usize,
    /// Offset in that value of the list field that set it.
    pub(super) within: usize,
}

impl<'a> Lists<'a> {
    /// Calls `f` with each list message, in order.
    pub(super) fn each(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), RowFault>,
    ) -> Result<(), RowFault> {
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

    /// Every float value, in order.
    pub(super) fn floats(&self, mut f: impl FnMut(&[u8])) -> Result<(), RowFault> {
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(packed)) if packed.len() % 4 == 0 => f(packed),
                    (_, 1, Value::Len(_)) => {
                        return Err(RowFault::from(
                            "packed floats whose length is not a multiple of 4",
                        ))
                    }
                    (_, 1, Value::Fixed32(bytes)) => f(&bytes),
                    (_, 1, _) => return Err(RowFault::from("float values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every int64 value, in order.
    pub(super) fn ints(
        &self,
        mut f: impl FnMut(i64) -> Result<(), RowFault>,
    ) -> Result<(), RowFault> {
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
                    (_, 1, _) => return Err(RowFault::from("int64 values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }

    /// Every bytes value, in order.
    pub(super) fn bytes(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), RowFault>,
    ) -> Result<(), RowFault> {
        self.each(|list| {
            for field in Fields::new(list) {
                match field? {
                    (_, 1, Value::Len(bytes)) => f(bytes)?,
                    (_, 1, _) => return Err(RowFault::from("bytes values of another wire type")),
                    _ => {}
                }
            }
            Ok(())
        })
    }
}

/// The final kind of a feature's map entry and where it was set; `None` if no kind is set.
pub(super) fn locate_lists(entry: &[u8]) -> Result<Option<(ListKind, usize, usize)>, WireError> {
    let mut found: Option<(ListKind, usize, usize)> = None;
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
            if !matches!(value, Value::Len(_)) {
                return Err("a value list is not length-delimited");
            }
            if found.map(|f| f.0) != Some(kind) {
                found = Some((kind, at, within));
            }
        }
    }
    Ok(found)
}
