//! [`Example`] and [`Label`]: the item type of tabular sources (CSV, IDX).

use serde::{Deserialize, Serialize};

/// One row of tabular data.
///
/// `dense` holds the numeric feature columns (`Float` and `Int`) in schema order,
/// contiguous so a batch becomes a tensor with one copy; `categorical` holds the
/// `Category` feature columns in schema order. Use [`Schema::dense_index`] and
/// [`Schema::categorical_index`] to find a column by name. The label column is in
/// neither.
///
/// [`Schema::dense_index`]: crate::Schema::dense_index
/// [`Schema::categorical_index`]: crate::Schema::categorical_index
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// Numeric features, in schema order of the numeric columns.
    pub dense: Vec<f32>,
    /// Categorical features, in schema order of the category columns.
    pub categorical: Vec<String>,
    /// The label, [`Label::None`] when the schema has no label column.
    pub label: Label,
}

/// The label of an [`Example`]; which variant depends on the label column's type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Label {
    /// No label column (prediction input).
    #[default]
    None,
    /// A `Float` label column: a regression target.
    Float(f32),
    /// An `Int` label column: a class id (non-negative), e.g. MNIST digits or Iris `0..2`.
    Class(u32),
    /// A `Category` label column: a class name, to be mapped through a vocabulary.
    Name(String),
}

impl Label {
    /// The label as a number: the float target or the class id; `None` otherwise.
    pub fn as_f32(&self) -> Option<f32> {
        match self {
            Label::Float(v) => Some(*v),
            Label::Class(c) => Some(*c as f32),
            Label::None | Label::Name(_) => None,
        }
    }

    /// The class id, for [`Label::Class`].
    pub fn class(&self) -> Option<u32> {
        match self {
            Label::Class(c) => Some(*c),
            _ => None,
        }
    }

    /// The class name, for [`Label::Name`].
    pub fn name(&self) -> Option<&str> {
        match self {
            Label::Name(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_accessors() {
        assert_eq!(Label::Float(1.5).as_f32(), Some(1.5));
        assert_eq!(Label::Class(3).as_f32(), Some(3.0));
        assert_eq!(Label::Class(3).class(), Some(3));
        assert_eq!(Label::Name("a".into()).name(), Some("a"));
        assert_eq!(Label::None.as_f32(), None);
        assert_eq!(Label::Float(1.0).class(), None);
        assert_eq!(Example::default().label, Label::None);
    }
}
