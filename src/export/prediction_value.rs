//! [`to_value`]: a prediction as a JSON value in one pass, each `f32` kept as the shortest
//! digits that read back as it, as serde_json writes an `f32` in text.
//!
//! `serde_json::to_value` widens an `f32` to the `f64` it equals (`0.26313546` becomes
//! `0.26313546299934387` when written out); printing the prediction as text and parsing it
//! back gives the short form, but costs an allocation per value twice over. Here an `f32`
//! becomes the `f64` nearest its own shortest digits, which prints as those digits, and the
//! rest is what `serde_json::to_value` makes.

use serde::ser::{self, Serialize};
use serde_json::{Map, Number, Value};

/// `value` as JSON, every `f32` in its shortest digits; `None` where serde_json could not
/// write it as text either (a map whose keys are not strings, numbers or booleans).
pub(crate) fn to_value<T: Serialize + ?Sized>(value: &T) -> Option<Value> {
    value.serialize(ValueSerializer).ok()
}

/// The `f64` that prints as `x`'s shortest digits (`null` for a NaN or an infinity, as JSON
/// text writes them).
fn short_f32(x: f32) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    // The digits serde_json writes for an `f32` (the shortest that read back as it, the
    // even one of a tie), read as the `f64` nearest them.
    let wide = zmij::Buffer::new()
        .format_finite(x)
        .parse::<f64>()
        .unwrap_or(f64::from(x));
    Number::from_f64(wide).map_or(Value::Null, Value::Number)
}

#[derive(Debug)]
struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Unsupported(msg.to_string())
    }
}

type Result<T> = std::result::Result<T, Unsupported>;

struct ValueSerializer;

/// A sequence or map under construction; `variant` wraps it as `{variant: …}`.
struct Compound {
    variant: Option<&'static str>,
    items: Vec<Value>,
    map: Map<String, Value>,
    key: Option<String>,
}

impl Compound {
    fn seq(variant: Option<&'static str>, len: Option<usize>) -> Self {
        Compound {
            variant,
            items: Vec::with_capacity(len.unwrap_or(0).min(4096)),
            map: Map::new(),
            key: None,
        }
    }

    fn wrap(variant: Option<&'static str>, value: Value) -> Value {
        match variant {
            None => value,
            Some(name) => Value::Object(Map::from_iter([(name.to_string(), value)])),
        }
    }

    fn end_seq(self) -> Result<Value> {
        Ok(Self::wrap(self.variant, Value::Array(self.items)))
    }

    fn end_map(self) -> Result<Value> {
        Ok(Self::wrap(self.variant, Value::Object(self.map)))
    }

    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.items.push(value.serialize(ValueSerializer)?);
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<()> {
        self.map
            .insert(key.to_string(), value.serialize(ValueSerializer)?);
        Ok(())
    }
}

/// A map key as serde_json writes it: a string, or a number or boolean in its text.
fn key_text(key: Value) -> Result<String> {
    match key {
        Value::String(text) => Ok(text),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(Unsupported("a map key must be a string".into())),
    }
}

impl ser::Serializer for ValueSerializer {
    type Ok = Value;
    type Error = Unsupported;
    type SerializeSeq = Compound;
    type SerializeTuple = Compound;
    type SerializeTupleStruct = Compound;
    type SerializeTupleVariant = Compound;
    type SerializeMap = Compound;
    type SerializeStruct = Compound;
    type SerializeStructVariant = Compound;

    fn serialize_bool(self, v: bool) -> Result<Value> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<Value> {
        // As text read back: an integer where one fits, else the nearest float.
        Ok(match (i64::try_from(v), u64::try_from(v)) {
            (Ok(small), _) => small.into(),
            (_, Ok(large)) => large.into(),
            _ => (v as f64).into(),
        })
    }
    fn serialize_u8(self, v: u8) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<Value> {
        Ok(u64::try_from(v).map_or_else(|_| (v as f64).into(), Value::from))
    }
    fn serialize_f32(self, v: f32) -> Result<Value> {
        Ok(short_f32(v))
    }
    fn serialize_f64(self, v: f64) -> Result<Value> {
        Ok(v.into())
    }
    fn serialize_char(self, v: char) -> Result<Value> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value> {
        Ok(Value::Array(v.iter().map(|&b| b.into()).collect()))
    }
    fn serialize_none(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value> {
        Ok(Value::String(variant.to_string()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value> {
        Ok(Compound::wrap(Some(variant), value.serialize(self)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound> {
        Ok(Compound::seq(None, len))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound> {
        Ok(Compound::seq(None, Some(len)))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Compound> {
        Ok(Compound::seq(None, Some(len)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound> {
        Ok(Compound::seq(Some(variant), Some(len)))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound> {
        Ok(Compound::seq(None, None))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound> {
        Ok(Compound::seq(None, None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound> {
        Ok(Compound::seq(Some(variant), None))
    }
}

/// The sequence-like compounds: each element pushed, the array made at the end.
macro_rules! sequence {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound {
            type Ok = Value;
            type Error = Unsupported;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.push(value)
            }
            fn end(self) -> Result<Value> {
                self.end_seq()
            }
        }
    )*};
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// The struct-like compounds: each field a member, the object made at the end.
macro_rules! structure {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound {
            type Ok = Value;
            type Error = Unsupported;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<()> {
                self.field(key, value)
            }
            fn end(self) -> Result<Value> {
                self.end_map()
            }
        }
    )*};
}

structure!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound {
    type Ok = Value;
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key_text(key.serialize(ValueSerializer)?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self.key.take().unwrap_or_default();
        self.field(&key, value)
    }
    fn end(self) -> Result<Value> {
        self.end_map()
    }
}

#[cfg(test)]
mod tests;
