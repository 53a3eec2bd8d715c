//! One value of an input read into its column: lists nested as the input's shape, elements
//! of its type; and the input a key names.

use std::collections::HashMap;

use estimator::export::TensorElements;
use estimator::Signature;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, SeqAccess, Visitor};

use super::declined;

/// One input's elements as they are read, and its shape per row.
pub(super) struct Column<'s> {
    pub(super) shape: &'s [usize],
    pub(super) elements: TensorElements,
}

/// The signature's input names, looked up by the text of a key without allocating it.
pub(super) enum Names<'s> {
    /// Few inputs: compared in turn.
    Few(Vec<&'s str>),
    /// Many (a canned estimator has one per feature): hashed.
    Many(HashMap<&'s str, usize>),
}

impl<'s> Names<'s> {
    pub(super) fn new(signature: &'s Signature) -> Self {
        let names = signature.inputs.iter().map(|i| i.name.as_str());
        match signature.inputs.len() {
            0..=16 => Names::Few(names.collect()),
            _ => Names::Many(names.enumerate().map(|(i, name)| (name, i)).collect()),
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        match self {
            Names::Few(names) => names.iter().position(|n| *n == name),
            Names::Many(names) => names.get(name).copied(),
        }
    }
}

/// A key that names an input: its index.
pub(super) struct InputName<'t, 's>(pub(super) &'t Names<'s>);

impl<'de> DeserializeSeed<'de> for InputName<'_, '_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for InputName<'_, '_> {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an input's name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<usize, E> {
        self.0.index(name).ok_or_else(declined)
    }
}

/// One value of an input: lists nested exactly as `shape`, elements of the column's type.
pub(super) struct Nested<'c> {
    pub(super) shape: &'c [usize],
    pub(super) elements: &'c mut TensorElements,
    /// Whether it is the input's whole value, which for a scalar input may be written as a
    /// one-element list (TF's `[batch, 1]` inputs), as the JSON reading takes it.
    pub(super) whole: bool,
}

impl Nested<'_> {
    pub(super) fn reborrow(&mut self) -> Nested<'_> {
        Nested {
            shape: self.shape,
            elements: self.elements,
            whole: self.whole,
        }
    }

    /// A number read as `f64` where the JSON reading would (`Number::as_f64`), and an
    /// integer as itself.
    fn number<E: serde::de::Error>(self, x: f64, integer: Option<i64>) -> Result<(), E> {
        if !self.shape.is_empty() {
            return Err(declined());
        }
        match (self.elements, integer) {
            (TensorElements::Float32(values), _) if (x as f32).is_finite() => values.push(x as f32),
            (TensorElements::Int64(values), Some(n)) => values.push(n),
            _ => return Err(declined()),
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Nested<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Nested<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an input's value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let (length, inner) = match self.shape.split_first() {
            Some((&length, inner)) => (length, inner),
            None if self.whole => (1, self.shape),
            None => return Err(declined()),
        };
        for _ in 0..length {
            let item = Nested {
                shape: inner,
                elements: &mut *self.elements,
                whole: false,
            };
            if items.next_element_seed(item)?.is_none() {
                return Err(declined());
            }
        }
        match items.next_element::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(declined()),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<(), E> {
        self.number(x, None)
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<(), E> {
        self.number(n as f64, Some(n))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<(), E> {
        self.number(n as f64, i64::try_from(n).ok())
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
        match (self.shape, self.elements) {
            ([], TensorElements::String(values)) => {
                values.push(text.to_owned());
                Ok(())
            }
            _ => Err(declined()),
        }
    }
}
