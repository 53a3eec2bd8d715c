//! Why a serving request's instance does not fit the signature; apart from the checks so
//! that `error.rs` can hold it without an import cycle.

use std::fmt;

use serde_json::{Number, Value};

/// What is wrong with one instance of a request, carried by
/// [`Error::Request`](crate::Error::Request) with the instance's index; each names the
/// input.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestFault {
    /// The instance has a member that is no input of the signature.
    UnknownInput {
        /// The member's name.
        name: String,
        /// The signature's inputs, comma-separated.
        inputs: String,
    },
    /// An input is missing.
    Missing {
        /// The input.
        input: String,
        /// The signature's inputs, comma-separated, when the check against it found it.
        inputs: Option<String>,
    },
    /// An input's value is not of the input's per-example shape.
    Shape {
        /// The input.
        input: String,
        /// Its per-example shape.
        shape: Vec<usize>,
        /// The value given.
        value: Value,
    },
    /// An element of an input is not of the input's type.
    Type {
        /// The input.
        input: String,
        /// What it must be, e.g. "a number".
        wanted: &'static str,
        /// The value given.
        value: Value,
    },
    /// A number beyond float32's range, which the model would read as infinity.
    OutOfRange {
        /// The input.
        input: String,
        /// The number given.
        number: Number,
    },
}

impl fmt::Display for RequestFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestFault::UnknownInput { name, inputs } => {
                write!(f, "'{name}' is not an input of the signature ({inputs})")
            }
            RequestFault::Missing {
                input,
                inputs: Some(inputs),
            } => write!(
                f,
                "input '{input}' is missing (the signature's inputs: {inputs})"
            ),
            RequestFault::Missing {
                input,
                inputs: None,
            } => write!(f, "input '{input}' is missing"),
            RequestFault::Shape {
                input,
                shape,
                value,
            } => write!(f, "input '{input}' must have shape {shape:?}, got {value}"),
            RequestFault::Type {
                input,
                wanted,
                value,
            } => write!(f, "input '{input}' must be {wanted}, got {value}"),
            RequestFault::OutOfRange { input, number } => write!(
                f,
                "input '{input}' is {number}, outside float32's range (±{:e})",
                f32::MAX
            ),
        }
    }
}
