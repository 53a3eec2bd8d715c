//! [`Labels`]: the label column of a [`ColumnarBatch`](super::ColumnarBatch), and
//! [`LabelKind`], which kind of column a batch's layout gives it.

use serde::{Deserialize, Serialize};

use super::{LabelRef, StringColumn};

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
