//! [`Schema`]: which columns to read, their types, defaults, and the label.

use serde::{Deserialize, Serialize};

use crate::Error;

/// The type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ColumnType {
    /// A number, read as `f32` into [`Example::dense`](crate::Example::dense); as label, a
    /// regression target ([`Label::Float`](crate::Label::Float)).
    Float,
    /// An integer, read into `dense` as `f32`; as label, a class id
    /// ([`Label::Class`](crate::Label::Class)).
    Int,
    /// A string, read into [`Example::categorical`](crate::Example::categorical); as label, a
    /// class name ([`Label::Name`](crate::Label::Name)).
    Category,
}

impl ColumnType {
    /// Whether values go to `dense` (Float, Int).
    pub fn is_numeric(self) -> bool {
        matches!(self, ColumnType::Float | ColumnType::Int)
    }
}

/// One column of a [`Schema`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Name, as in the file's header.
    pub name: String,
    /// Type.
    pub kind: ColumnType,
    /// Text used in place of an empty cell (parsed like a cell); `None`: empty cells are an
    /// error for numeric columns and the label, and `""` for category features.
    #[serde(default)]
    pub default: Option<String>,
}

/// The columns to read from a tabular file, in the order features are laid out.
///
/// Columns of the file that are not in the schema are ignored; schema columns missing
/// from the file's header are an error. Build one with the chained methods:
///
/// ```
/// use datasets::{ColumnType, Schema};
/// let schema = Schema::new()
///     .float("sepal_length")
///     .float("petal_width").with_default("0")
///     .category("colour")
///     .int("label")
///     .label("label");
/// assert_eq!(schema.dense_names(), ["sepal_length", "petal_width"]);
/// assert_eq!(schema.dense_index("petal_width"), Some(1));
/// assert_eq!(schema.categorical_index("colour"), Some(0));
/// assert_eq!(schema.label_column().unwrap().kind, ColumnType::Int);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Every column read, the label included, in order.
    pub columns: Vec<Column>,
    /// Name of the label column (one of `columns`), if any.
    #[serde(default)]
    pub label: Option<String>,
    /// For an `Int` label of class ids: how many classes there are. A row whose id is not
    /// below it is an error naming its file and line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_classes: Option<u32>,
}

impl Schema {
    /// An empty schema.
    pub fn new() -> Self {
        Schema::default()
    }

    /// Adds a column of type `kind`.
    pub fn add(mut self, name: impl Into<String>, kind: ColumnType) -> Self {
        self.columns.push(Column {
            name: name.into(),
            kind,
            default: None,
        });
        self
    }

    /// Adds a `Float` column.
    pub fn float(self, name: impl Into<String>) -> Self {
        self.add(name, ColumnType::Float)
    }

    /// Adds an `Int` column.
    pub fn int(self, name: impl Into<String>) -> Self {
        self.add(name, ColumnType::Int)
    }

    /// Adds a `Category` column.
    pub fn category(self, name: impl Into<String>) -> Self {
        self.add(name, ColumnType::Category)
    }

    /// Sets the default (text for empty cells) of the column added last.
    pub fn with_default(mut self, default: impl Into<String>) -> Self {
        if let Some(c) = self.columns.last_mut() {
            c.default = Some(default.into());
        }
        self
    }

    /// Makes column `name` the label (it must be one of the columns).
    pub fn label(mut self, name: impl Into<String>) -> Self {
        self.label = Some(name.into());
        self
    }

    /// Declares that the label's class ids are below `n_classes` (the label must be an
    /// `Int` column); reading a row with another id is then an error naming its line.
    pub fn with_label_classes(mut self, n_classes: u32) -> Self {
        self.label_classes = Some(n_classes);
        self
    }

    /// Checks for duplicate names, a label that is not a column, defaults that do not
    /// parse as their column's type, and a class count for a label that is not `Int`.
    pub fn validate(&self) -> Result<(), Error> {
        for (i, c) in self.columns.iter().enumerate() {
            if self.columns[..i].iter().any(|d| d.name == c.name) {
                return Err(Error::Schema(format!("column '{}' appears twice", c.name)));
            }
            if let Some(d) = &c.default {
                let is_label = self.label.as_deref() == Some(c.name.as_str());
                c.check_default(d, is_label)?;
            }
        }
        if let Some(label) = &self.label {
            if self.get(label).is_none() {
                return Err(Error::Schema(format!(
                    "label '{label}' is not one of the columns"
                )));
            }
        }
        // Without a label (a schema for prediction) the class count has nothing to check.
        if let (Some(n), Some(label)) = (self.label_classes, self.label_column()) {
            if label.kind != ColumnType::Int {
                return Err(Error::Schema(format!(
                    "label_classes = {n} needs an int label column of class ids"
                )));
            }
        }
        Ok(())
    }

    /// The column called `name`.
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The label column, if any.
    pub fn label_column(&self) -> Option<&Column> {
        self.get(self.label.as_deref()?)
    }

    /// The feature columns (all but the label), in order.
    pub fn features(&self) -> impl Iterator<Item = &Column> {
        self.columns
            .iter()
            .filter(move |c| self.label.as_deref() != Some(c.name.as_str()))
    }

    /// Names of the numeric features: the layout of [`Example::dense`](crate::Example::dense).
    pub fn dense_names(&self) -> Vec<&str> {
        self.features()
            .filter(|c| c.kind.is_numeric())
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Names of the category features: the layout of
    /// [`Example::categorical`](crate::Example::categorical).
    pub fn categorical_names(&self) -> Vec<&str> {
        self.features()
            .filter(|c| c.kind == ColumnType::Category)
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Index of numeric feature `name` in [`Example::dense`](crate::Example::dense).
    pub fn dense_index(&self, name: &str) -> Option<usize> {
        self.dense_names().iter().position(|n| *n == name)
    }

    /// Index of category feature `name` in
    /// [`Example::categorical`](crate::Example::categorical).
    pub fn categorical_index(&self, name: &str) -> Option<usize> {
        self.categorical_names().iter().position(|n| *n == name)
    }

    /// Number of numeric features (`Example::dense.len()`).
    pub fn num_dense(&self) -> usize {
        self.features().filter(|c| c.kind.is_numeric()).count()
    }

    /// Number of category features (`Example::categorical.len()`).
    pub fn num_categorical(&self) -> usize {
        self.features()
            .filter(|c| c.kind == ColumnType::Category)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::new()
            .float("a")
            .category("c")
            .int("label")
            .int("b")
            .with_default("3")
            .label("label")
    }

    #[test]
    fn layout_excludes_the_label() {
        let s = schema();
        assert_eq!(s.dense_names(), ["a", "b"]);
        assert_eq!(s.categorical_names(), ["c"]);
        assert_eq!(s.num_dense(), 2);
        assert_eq!(s.num_categorical(), 1);
        assert_eq!(s.dense_index("b"), Some(1));
        assert_eq!(s.dense_index("label"), None);
        assert_eq!(s.categorical_index("a"), None);
        assert_eq!(s.get("b").unwrap().default.as_deref(), Some("3"));
        assert_eq!(s.label_column().unwrap().name, "label");
        s.validate().unwrap();
    }

    #[test]
    fn validation_errors() {
        let dup = Schema::new().float("a").int("a");
        assert_eq!(
            dup.validate().unwrap_err().to_string(),
            "schema: column 'a' appears twice"
        );
        let no_label = Schema::new().float("a").label("y");
        assert!(no_label.validate().unwrap_err().to_string().contains("'y'"));
        let bad_default = Schema::new().float("a").with_default("x");
        assert!(bad_default.validate().is_err());
    }

    #[test]
    fn serde_round_trip() {
        let s = schema();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), s);
    }
}
