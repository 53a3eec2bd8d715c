//! [`Labels`]: the label column of a [`ColumnarBatch`](super::ColumnarBatch);
//! [`LabelKind`], which kind of column a batch's layout gives it; and [`LabelRef`], one
//! row's label as a row lends it.

use serde::{Deserialize, Serialize};

use super::StringColumn;
use crate::Label;

/// A borrowed [`Label`]: what a row's label is without owning a class name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LabelRef<'a> {
    /// No label.
    None,
    /// A regression target.
    Float(f32),
    /// A class id.
    Class(u32),
    /// A class name.
    Name(&'a str),
}

impl LabelRef<'_> {
    /// The owned [`Label`].
    pub fn to_label(self) -> Label {
        match self {
            LabelRef::None => Label::None,
            LabelRef::Float(v) => Label::Float(v),
            LabelRef::Class(c) => Label::Class(c),
            LabelRef::Name(s) => Label::Name(s.to_owned()),
        }
    }

    /// The label as a number: a target, or a class id as `f32`.
    pub fn as_f32(self) -> Option<f32> {
        match self {
            LabelRef::Float(v) => Some(v),
            LabelRef::Class(c) => Some(c as f32),
            LabelRef::None | LabelRef::Name(_) => None,
        }
    }

    /// The kind of column this label goes in; `None` for no label.
    pub(crate) fn kind(self) -> Option<LabelKind> {
        match self {
            LabelRef::None => None,
            LabelRef::Float(_) => Some(LabelKind::Float),
            LabelRef::Class(_) => Some(LabelKind::Class),
            LabelRef::Name(_) => Some(LabelKind::Name),
        }
    }
}

impl<'a> From<&'a Label> for LabelRef<'a> {
    fn from(label: &'a Label) -> Self {
        match label {
            Label::None => LabelRef::None,
            Label::Float(v) => LabelRef::Float(*v),
            Label::Class(c) => LabelRef::Class(*c),
            Label::Name(s) => LabelRef::Name(s),
        }
    }
}

/// The kind of a [`Labels`] column, without its values; a layout with no label column
/// has `None` for an `Option<LabelKind>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LabelKind {
    Float,
    Class,
    Name,
}

impl LabelKind {
    /// How error messages name a label of kind `kind`.
    pub(crate) fn describe(kind: Option<Self>) -> &'static str {
        match kind {
            None => "no label",
            Some(LabelKind::Float) => "a float label",
            Some(LabelKind::Class) => "a class id label",
            Some(LabelKind::Name) => "a class name label",
        }
    }
}

/// The labels of a [`ColumnarBatch`](super::ColumnarBatch), one column whose type follows
/// the label column's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Labels {
    /// No label column.
    #[default]
    None,
    /// Regression targets.
    Float(Vec<f32>),
    /// Class ids.
    Class(Vec<u32>),
    /// Class names.
    Name(StringColumn),
}

impl Labels {
    /// Number of labels (0 for [`Labels::None`]).
    pub fn len(&self) -> usize {
        match self {
            Labels::None => 0,
            Labels::Float(v) => v.len(),
            Labels::Class(v) => v.len(),
            Labels::Name(v) => v.len(),
        }
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every label, borrowed, in row order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LabelRef<'_>> + '_ {
        (0..self.len()).map(|i| match self {
            Labels::None => LabelRef::None,
            Labels::Float(v) => LabelRef::Float(v[i]),
            Labels::Class(v) => LabelRef::Class(v[i]),
            Labels::Name(v) => LabelRef::Name(v.get(i)),
        })
    }

    /// An empty column of kind `kind`, reusing this one's allocation if it is of that
    /// kind.
    pub(super) fn reset_for(&mut self, kind: Option<LabelKind>) {
        match (&mut *self, kind) {
            (Labels::Float(v), Some(LabelKind::Float)) => v.clear(),
            (Labels::Class(v), Some(LabelKind::Class)) => v.clear(),
            (Labels::Name(v), Some(LabelKind::Name)) => v.clear(),
            (_, None) => *self = Labels::None,
            (_, Some(LabelKind::Float)) => *self = Labels::Float(Vec::new()),
            (_, Some(LabelKind::Class)) => *self = Labels::Class(Vec::new()),
            (_, Some(LabelKind::Name)) => *self = Labels::Name(StringColumn::new()),
        }
    }

    /// Appends `label`; `false` if it is not of this column's kind.
    pub(super) fn push(&mut self, label: LabelRef<'_>) -> bool {
        match (self, label) {
            (Labels::None, LabelRef::None) => {}
            (Labels::Float(v), LabelRef::Float(x)) => v.push(x),
            (Labels::Class(v), LabelRef::Class(c)) => v.push(c),
            (Labels::Name(v), LabelRef::Name(s)) => v.push(s),
            _ => return false,
        }
        true
    }

    pub(super) fn kind(&self) -> Option<LabelKind> {
        match self {
            Labels::None => None,
            Labels::Float(_) => Some(LabelKind::Float),
            Labels::Class(_) => Some(LabelKind::Class),
            Labels::Name(_) => Some(LabelKind::Name),
        }
    }
}
