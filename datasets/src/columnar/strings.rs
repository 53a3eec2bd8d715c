//! [`StringColumn`]: many strings in one allocation.

use serde::{Deserialize, Serialize};

/// A column of strings stored back to back in one `String`, with the end offset of each.
///
/// Appending a value copies its bytes into the shared buffer, so a column of `n` values
/// costs two allocations however large `n` is, and clearing it keeps both for reuse.
///
/// ```
/// use datasets::StringColumn;
///
/// let mut colours: StringColumn = ["red", "", "blue"].into_iter().collect();
/// colours.push("green");
/// assert_eq!(colours.len(), 4);
/// assert_eq!(colours.get(2), "blue");
/// assert_eq!(colours.iter().collect::<Vec<_>>(), ["red", "", "blue", "green"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StringColumnParts")]
pub struct StringColumn {
    data: String,
    ends: Vec<usize>,
}

/// The serialised form, checked before it becomes a column so that `get` cannot slice
/// out of bounds or through a character.
#[derive(Deserialize)]
struct StringColumnParts {
    data: String,
    ends: Vec<usize>,
}

impl TryFrom<StringColumnParts> for StringColumn {
    type Error = crate::Error;

    fn try_from(parts: StringColumnParts) -> Result<Self, crate::Error> {
        let bad = |message: String| crate::Error::Layout {
            stage: "StringColumn",
            message,
        };
        let mut start = 0;
        for (i, &end) in parts.ends.iter().enumerate() {
            if end < start || end > parts.data.len() || !parts.data.is_char_boundary(end) {
                return Err(bad(format!("value {i} ends at {end}, not a valid offset")));
            }
            start = end;
        }
        if start != parts.data.len() {
            return Err(bad(format!(
                "{} bytes of text but the last value ends at {start}",
                parts.data.len()
            )));
        }
        Ok(StringColumn {
            data: parts.data,
            ends: parts.ends,
        })
    }
}

impl StringColumn {
    /// An empty column.
    pub fn new() -> Self {
        StringColumn::default()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the column holds no values.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends `value`.
    pub fn push(&mut self, value: &str) {
        self.data.push_str(value);
        self.ends.push(self.data.len());
    }

    /// Value `i`.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`, as slice indexing does.
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// All values back to back, as stored.
    pub fn as_str(&self) -> &str {
        &self.data
    }

    /// The end offset of each value in [`as_str`](Self::as_str).
    pub fn ends(&self) -> &[usize] {
        &self.ends
    }

    /// Removes every value, keeping the allocations.
    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
    }

    /// Keeps the first `len` values: a row that fails half-way is taken back out.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.ends.len() {
            self.data
                .truncate(if len == 0 { 0 } else { self.ends[len - 1] });
            self.ends.truncate(len);
        }
    }

    pub(crate) fn reserve(&mut self, values: usize) {
        self.ends.reserve(values);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

impl<'a> FromIterator<&'a str> for StringColumn {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut column = StringColumn::new();
        for value in iter {
            column.push(value);
        }
        column
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_get_iter_clear() {
        let mut c = StringColumn::new();
        assert!(c.is_empty());
        c.push("héllo");
        c.push("");
        c.push("x,y");
        assert_eq!(c.len(), 3);
        assert_eq!((c.get(0), c.get(1), c.get(2)), ("héllo", "", "x,y"));
        assert_eq!(c.as_str(), "héllox,y");
        assert_eq!(c.ends(), [6, 6, 9]);
        assert_eq!(c.iter().len(), 3);
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.iter().count(), 0);
    }

    #[test]
    fn serde_round_trip_and_bad_offsets_are_errors() {
        let c: StringColumn = ["a", "bé", ""].into_iter().collect();
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<StringColumn>(&json).unwrap(), c);
        for bad in [
            r#"{"data":"abc","ends":[2,1,3]}"#,
            r#"{"data":"abc","ends":[4]}"#,
            r#"{"data":"abc","ends":[1]}"#,
            r#"{"data":"é","ends":[1,2]}"#,
        ] {
            let err = serde_json::from_str::<StringColumn>(bad).unwrap_err();
            assert!(err.to_string().starts_with("StringColumn: "), "{err}");
        }
    }
}
