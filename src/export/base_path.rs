//! How a base path of exports is read, by the writer numbering a new export and by a
//! server looking for versions: one reading, so that the two never disagree on which
//! numbers are taken.

use std::path::{Path, PathBuf};

/// Every numbered directory in `base` (no label) and one level down (labelled by the
/// directory between: `export/latest/7`), in that order, each sorted. Names are read as
/// numbers, as TF Serving reads them: `01800000000` is version 1800000000. Names starting
/// with `.` (an export being assembled) are passed over.
pub fn version_dirs(base: &Path) -> std::io::Result<Vec<(u64, PathBuf, Option<String>)>> {
    let mut found = Vec::new();
    let mut labelled = Vec::new();
    for entry in std::fs::read_dir(base)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        match name.parse::<u64>() {
            Ok(version) => found.push((version, entry.path(), None)),
            Err(_) if !name.starts_with('.') => {
                for inner in std::fs::read_dir(entry.path())? {
                    let inner = inner?;
                    let inner_name = inner.file_name().to_string_lossy().into_owned();
                    if let (Ok(version), true) =
                        (inner_name.parse::<u64>(), inner.file_type()?.is_dir())
                    {
                        labelled.push((version, inner.path(), Some(name.clone())));
                    }
                }
            }
            Err(_) => {}
        }
    }
    found.sort();
    labelled.sort();
    found.extend(labelled);
    Ok(found)
}
