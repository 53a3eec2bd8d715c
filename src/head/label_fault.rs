//! Why a label cannot be used by a head; apart from the heads so that `error.rs` can hold
//! it without an import cycle.

use std::fmt;

/// What is wrong with a label, carried by [`Error::Label`](crate::Error::Label).
#[derive(Debug, Clone, PartialEq)]
pub enum LabelFault {
    /// A string label that is not in the label vocabulary.
    NotInVocabulary {
        /// The label.
        name: String,
        /// The vocabulary.
        vocabulary: Vec<String>,
    },
    /// A string label, and no vocabulary to look it up in.
    NoVocabulary {
        /// The label.
        name: String,
    },
    /// A number that is not a class id (negative, or with a fraction).
    NotAClassId {
        /// The label.
        value: f32,
        /// The head's classes.
        n_classes: usize,
    },
    /// A class id at or above the head's class count.
    OutOfRange {
        /// The class id.
        id: usize,
        /// The head's classes.
        n_classes: usize,
    },
    /// A regression label that is not a number (as the input read it).
    NotANumber {
        /// The label, as debug-printed.
        label: String,
    },
    /// A regression label outside the range its loss takes (a count below 0, a
    /// probability outside [0, 1]).
    OutOfDomain {
        /// The label.
        value: f32,
        /// The range, in words.
        domain: &'static str,
    },
    /// An example with no label.
    Missing,
}

impl fmt::Display for LabelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelFault::NotInVocabulary { name, vocabulary } => {
                write!(
                    f,
                    "label '{name}' is not in the label vocabulary {vocabulary:?}"
                )
            }
            LabelFault::NoVocabulary { name } => write!(
                f,
                "label '{name}' is a string: give a label vocabulary (or integer labels)"
            ),
            LabelFault::NotAClassId { value, n_classes } => {
                write!(f, "label {value} is not a class id (0..{n_classes})")
            }
            LabelFault::OutOfRange { id, n_classes } => {
                write!(f, "label {id} is out of range for {n_classes} classes")
            }
            LabelFault::NotANumber { label } => {
                write!(f, "regression label {label} is not a number")
            }
            LabelFault::OutOfDomain { value, domain } => {
                write!(f, "regression label {value} is not {domain}")
            }
            LabelFault::Missing => write!(f, "an example has no label"),
        }
    }
}
