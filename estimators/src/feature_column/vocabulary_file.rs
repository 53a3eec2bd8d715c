//! `categorical_column_with_vocabulary_file`: a vocabulary read from a file, one value a
//! line.

use std::collections::HashMap;
use std::path::Path;

use estimator::{Error, Result};

use super::vocabulary::{categorical_column_with_vocabulary_list, VocabularyListColumn};

/// A category from input column `key` looked up in the vocabulary the file at `path` lists,
/// one value a line, in order (TF's `categorical_column_with_vocabulary_file`): the first
/// `vocabulary_size` lines when given, else every line. Then, as for a list, one OOV bucket
/// by default.
///
/// The values are read now and kept in the column, so a saved model or an export no longer
/// needs the file (TF copies it into the SavedModel's assets). A line is its text without
/// its line ending (`\n` or `\r\n`); an empty line is the value `""`. A value listed twice,
/// a line that is not UTF-8, a file with no lines, or a `vocabulary_size` of 0 or beyond
/// the file's lines is an error naming the file (and the line).
pub fn categorical_column_with_vocabulary_file(
    key: impl Into<String>,
    path: impl AsRef<Path>,
    vocabulary_size: Option<usize>,
) -> Result<VocabularyListColumn> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let bad = |what: String| Error::Config(format!("vocabulary file {}: {what}", path.display()));
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // The text after the last line ending is a line only when it is not empty.
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    let size = match vocabulary_size {
        Some(0) => return Err(bad("vocabulary_size 0: a vocabulary needs a value".into())),
        Some(n) if n > lines.len() => {
            return Err(bad(format!(
                "vocabulary_size {n}, but the file has {} lines",
                lines.len()
            )))
        }
        Some(n) => n,
        None if lines.is_empty() => return Err(bad("the file lists no values".into())),
        None => lines.len(),
    };
    let mut first_line: HashMap<&str, usize> = HashMap::with_capacity(size);
    let mut vocabulary = Vec::with_capacity(size);
    for (index, line) in lines[..size].iter().enumerate() {
        let number = index + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let value = std::str::from_utf8(line)
            .map_err(|_| bad(format!("line {number} is not UTF-8 text")))?;
        if let Some(first) = first_line.insert(value, number) {
            return Err(bad(format!(
                "line {number}: '{value}' is listed twice (first on line {first})"
            )));
        }
        vocabulary.push(value);
    }
    Ok(categorical_column_with_vocabulary_list(key, vocabulary))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file(text: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text).unwrap();
        file
    }

    fn error(text: &[u8], size: Option<usize>) -> String {
        let file = file(text);
        let err = categorical_column_with_vocabulary_file("pet", file.path(), size).unwrap_err();
        let err = err.to_string();
        assert!(err.contains(&file.path().display().to_string()), "{err}");
        err
    }

    #[test]
    fn each_line_is_a_value_in_order_and_unknown_values_take_the_oov_bucket() {
        let listed = file(b"cat\r\ndog\n\nfish");
        let column = categorical_column_with_vocabulary_file("pet", listed.path(), None).unwrap();
        assert_eq!(column.vocabulary, ["cat", "dog", "", "fish"]);
        assert_eq!(column.id_of("dog").unwrap(), 1);
        assert_eq!(column.id_of("").unwrap(), 2);
        assert_eq!(column.id_of("bird").unwrap(), 4);
        assert_eq!(column.num_buckets(), 5);
        assert_eq!(
            column,
            categorical_column_with_vocabulary_list("pet", ["cat", "dog", "", "fish"])
        );

        let first_two = categorical_column_with_vocabulary_file("pet", listed.path(), Some(2));
        assert_eq!(first_two.unwrap().vocabulary, ["cat", "dog"]);
        let ended = file(b"cat\ndog\n");
        let column = categorical_column_with_vocabulary_file("pet", ended.path(), None).unwrap();
        assert_eq!(column.vocabulary, ["cat", "dog"]);
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it_and_the_line() {
        let twice = error(b"cat\ndog\ncat\n", None);
        assert!(
            twice.contains("line 3: 'cat' is listed twice (first on line 1)"),
            "{twice}"
        );
        let binary = error(b"cat\n\xff\xfe\n", None);
        assert!(binary.contains("line 2 is not UTF-8 text"), "{binary}");
        assert!(error(b"", None).contains("lists no values"));
        assert!(error(b"cat\n", Some(0)).contains("vocabulary_size 0"));
        let short = error(b"cat\ndog\n", Some(3));
        assert!(
            short.contains("vocabulary_size 3, but the file has 2 lines"),
            "{short}"
        );
        // Beyond the lines kept, a repeat does not matter.
        let kept = file(b"cat\ndog\ncat\n");
        assert!(categorical_column_with_vocabulary_file("pet", kept.path(), Some(2)).is_ok());
        let missing = categorical_column_with_vocabulary_file("pet", "/no/such/vocab", None);
        assert!(missing
            .unwrap_err()
            .to_string()
            .starts_with("/no/such/vocab: "));
    }
}
