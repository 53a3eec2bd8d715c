//! [`ModelVersions`]: the versions of one model found under its base path, loaded.
//!
//! A version is a directory named by a number (our exports' `<unix-timestamp>`), either in
//! the base path itself or one level down, where the directory between names a label
//! (`export/latest/…`, `export/best/…`: the layouts of the exporters); the label points at
//! the newest version under it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::loaders::Loaders;
use crate::servable::Servable;

/// One model's loaded versions and labels.
#[derive(Clone, Default)]
pub struct ModelVersions {
    /// Version number → the loaded export.
    pub versions: BTreeMap<u64, Arc<dyn Servable>>,
    /// Label → version number.
    pub labels: BTreeMap<String, u64>,
    /// Version number → its directory (loaded or refused).
    pub dirs: BTreeMap<u64, PathBuf>,
    /// Version number → why it did not load.
    pub refused: BTreeMap<u64, String>,
}

impl ModelVersions {
    /// The newest version.
    pub fn newest(&self) -> Option<(u64, &Arc<dyn Servable>)> {
        self.versions.iter().next_back().map(|(v, s)| (*v, s))
    }

    /// Loads the versions under `base` that `known` does not hold yet, keeping those it
    /// holds (a version directory is never rewritten: exports are renamed into place
    /// whole). A version that fails to load is logged and left out; it is tried again at
    /// the next scan.
    pub fn scan(base: &Path, known: &ModelVersions, loaders: &Loaders) -> std::io::Result<Self> {
        let mut next = ModelVersions::default();
        for (version, dir, label) in version_dirs(base)? {
            if let Some(label) = label {
                let newest = next.labels.entry(label).or_insert(version);
                *newest = (*newest).max(version);
            }
            if next.dirs.contains_key(&version) {
                continue;
            }
            next.dirs.insert(version, dir.clone());
            if let Some(loaded) = known.versions.get(&version) {
                next.versions.insert(version, Arc::clone(loaded));
                continue;
            }
            match loaders.load(&dir) {
                Ok(loaded) => {
                    tracing::info!("loaded version {version} from {}", dir.display());
                    next.versions.insert(version, loaded);
                }
                Err(e) => {
                    tracing::error!("version {version} is not served: {e}");
                    next.refused.insert(version, e);
                }
            }
        }
        // A label whose newest version did not load points at nothing.
        next.labels
            .retain(|_, version| next.versions.contains_key(version));
        Ok(next)
    }
}

/// Every numbered directory in `base` (no label) and one level down (labelled by the
/// directory between), in that order.
fn version_dirs(base: &Path) -> std::io::Result<Vec<(u64, PathBuf, Option<String>)>> {
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
