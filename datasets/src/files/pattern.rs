//! File patterns: a comma-separated list of paths and globs (`data/train-*.csv`), as
//! `tf.io.gfile.glob` and `tf.data.Dataset.list_files(shuffle=False)` expand them.

use std::path::PathBuf;

use crate::Error;

/// Whether `text` holds a glob wildcard (`*`, `?`, `[`).
fn is_pattern(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// The files `list` names: each comma-separated entry is a path, or a glob (`*`, `?`,
/// `[abc]`, `**` for any directories) whose matches come sorted by path, so every worker
/// of a cluster sees the same list. Entries keep their order. A glob that matches nothing,
/// an empty entry and a file named twice are errors naming them; a name may not hold a
/// comma.
pub(crate) fn expand(list: &str) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "file list '{list}' has an empty entry"
            )));
        }
        let found = if is_pattern(entry) {
            glob_files(entry)?
        } else {
            vec![PathBuf::from(entry)]
        };
        for file in found {
            if files.contains(&file) {
                return Err(Error::InvalidArgument(format!(
                    "{} is named twice by '{list}': every file must be read once",
                    file.display()
                )));
            }
            files.push(file);
        }
    }
    Ok(files)
}

/// The paths `pattern` matches, sorted.
fn glob_files(pattern: &str) -> Result<Vec<PathBuf>, Error> {
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let paths = glob::glob_with(pattern, options).map_err(|e| {
        Error::InvalidArgument(format!(
            "'{pattern}' is not a valid glob: {} at character {}",
            e.msg,
            e.pos + 1
        ))
    })?;
    let mut found = Vec::new();
    for path in paths {
        match path {
            Ok(path) => found.push(path),
            Err(e) => {
                let path = e.path().to_path_buf();
                return Err(Error::io(path, e.into()));
            }
        }
    }
    if found.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "no file matches '{pattern}'"
        )));
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &std::path::Path, names: &[&str]) {
        for name in names {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
    }

    #[test]
    fn globs_expand_sorted_and_lists_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        touch(
            d,
            &[
                "train-2.csv",
                "train-10.csv",
                "train-1.csv",
                "eval.csv",
                ".hidden-3",
            ],
        );
        let at = |name: &str| d.join(name);
        let glob = format!("{}/train-*.csv", d.display());
        assert_eq!(
            expand(&glob).unwrap(),
            [at("train-1.csv"), at("train-10.csv"), at("train-2.csv")]
        );
        let list = format!("{0}/eval.csv, {0}/train-?.csv", d.display());
        assert_eq!(
            expand(&list).unwrap(),
            [at("eval.csv"), at("train-1.csv"), at("train-2.csv")]
        );
        // A path without wildcards is taken as it is; opening it says whether it exists.
        let missing = format!("{}/absent.csv", d.display());
        assert_eq!(expand(&missing).unwrap(), [at("absent.csv")]);
        assert_eq!(
            expand(&format!("{}/*-3", d.display()))
                .err()
                .unwrap()
                .to_string(),
            format!("invalid argument: no file matches '{}/*-3'", d.display())
        );
    }

    #[test]
    fn bad_lists_are_refused_naming_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        touch(d, &["a.csv"]);
        let twice = format!("{0}/a.csv,{0}/*.csv", d.display());
        assert_eq!(
            expand(&twice).unwrap_err().to_string(),
            format!(
                "invalid argument: {}/a.csv is named twice by '{twice}': every file must be \
                 read once",
                d.display()
            )
        );
        let empty = format!("{}/a.csv,", d.display());
        assert!(expand(&empty)
            .unwrap_err()
            .to_string()
            .contains("an empty entry"));
        let bad = format!("{}/[a.csv", d.display());
        assert!(expand(&bad)
            .unwrap_err()
            .to_string()
            .contains("is not a valid glob"));
    }
}
