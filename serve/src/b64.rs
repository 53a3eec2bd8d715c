//! TF Serving's binary values in JSON bodies: `{"b64": "<standard base64>"}`, an object of
//! that one member. Serialized tf.Examples come so, and any string a client did not want
//! to escape.

use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde_json::Value;

use crate::error::ServeError;

/// Standard base64, its padding optional, as TF Serving's decoder reads it.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The encoded text of `value` when it is a binary value.
pub(crate) fn encoded(value: &Value) -> Option<&str> {
    match value {
        Value::Object(members) if members.len() == 1 => members.get("b64")?.as_str(),
        _ => None,
    }
}

/// The bytes of binary value `encoded`; `what` names it in the error.
pub(crate) fn decode(encoded: &str, what: impl FnOnce() -> String) -> Result<Vec<u8>, ServeError> {
    BASE64
        .decode(encoded)
        .map_err(|e| ServeError::BadRequest(format!("{}: not base64 ({e})", what())))
}

/// `value` with every binary value in it (itself, or nested in lists) replaced by its text:
/// the string inputs and features of this project's models are text, so bytes that are not
/// UTF-8 are refused, named by `what`.
pub(crate) fn decode_texts(value: &mut Value, what: &dyn Fn() -> String) -> Result<(), ServeError> {
    match value {
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| decode_texts(item, what)),
        Value::Object(_) => {
            let Some(text) = encoded(value) else {
                return Ok(());
            };
            let bytes = decode(text, what)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ServeError::BadRequest(format!(
                    "{}: its b64 value is not UTF-8 text, which this model's string inputs are",
                    what()
                ))
            })?;
            *value = Value::String(text);
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_an_object_of_the_one_member_b64_holding_a_string_is_a_binary_value() {
        assert_eq!(encoded(&json!({"b64": "aGk="})), Some("aGk="));
        assert_eq!(encoded(&json!({"b64": "aGk=", "x": 1})), None);
        assert_eq!(encoded(&json!({"b64": 1})), None);
        assert_eq!(encoded(&json!("aGk=")), None);
    }

    #[test]
    fn binary_values_become_their_text_with_or_without_padding_nested_or_not() {
        let mut value = json!([{"b64": "aGk="}, [{"b64": "aGk"}], "plain", 1.5, {"x": 1}]);
        decode_texts(&mut value, &|| "input 'x'".into()).unwrap();
        assert_eq!(value, json!(["hi", ["hi"], "plain", 1.5, {"x": 1}]));
    }

    #[test]
    fn what_is_not_base64_or_not_text_is_refused_naming_it() {
        let name = || "instance 3, input 'word'".to_string();
        let mut garbage = json!({"b64": "%%%"});
        let err = decode_texts(&mut garbage, &name).unwrap_err().to_string();
        assert!(
            err.starts_with("instance 3, input 'word': not base64"),
            "{err}"
        );
        let mut binary = json!({"b64": "/w=="});
        let err = decode_texts(&mut binary, &name).unwrap_err().to_string();
        assert!(err.contains("not UTF-8 text"), "{err}");
    }
}
