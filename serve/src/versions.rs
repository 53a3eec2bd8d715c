//! [`ModelVersions`]: the versions of one model found under its base path that its
//! [`VersionPolicy`](crate::VersionPolicy) and labels pick, loaded.
//!
//! A version is a directory named by a number (our exports' `<unix-timestamp>`), either in
//! the base path itself or one level down, where the directory between names a label
//! (`export/latest/…`, `export/best/…`: the layouts of the exporters); the label points at
//! the newest version under it.
//!
//! Names are read as numbers, as TF Serving reads them, so `01800000000` is version
//! 1800000000, and `latest/7` and `final/7` are both version 7. Directories naming one
//! version that hold the same export (a copy under a second label) serve as that version.
//! Holding different exports, the version is ambiguous: TF Serving warns and loads one of
//! them; here neither is served and an error names every directory, since serving either
//! could answer with the wrong model. The directories are read by the core's
//! `version_dirs`, which the export writer numbers by too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use estimator::export::version_dirs;

use crate::dir_stamp::DirStamp;
use crate::error::ServeError;
use crate::load_fault::LoadFault;
use crate::loaders::Loaders;
use crate::model_config::ModelConfig;
use crate::same_export::same_export;
use crate::servable::Servable;

/// One model's loaded versions and labels.
#[derive(Clone, Default)]
pub struct ModelVersions {
    /// Version number → the loaded export.
    pub versions: BTreeMap<u64, Arc<dyn Servable>>,
    /// Label → version number.
    pub labels: BTreeMap<String, u64>,
    /// Version number → the directories naming it (loaded from the first, or refused).
    pub dirs: BTreeMap<u64, Vec<PathBuf>>,
    /// Version number → why it did not load.
    pub refused: BTreeMap<u64, LoadFault>,
    /// Versions named by directories holding different exports: never served.
    pub ambiguous: BTreeSet<u64>,
    /// Version number → its directories as they were when last looked at, so that a
    /// version refused (ambiguous, or failing to load) is tried again only once they
    /// change, and logged once per change instead of at every scan.
    stamps: BTreeMap<u64, DirStamp>,
    /// Version number → the loads of it that failed since its directories last changed,
    /// and when the last one was.
    failed_loads: BTreeMap<u64, (u32, Instant)>,
}

impl ModelVersions {
    /// How many loads of `version` failed since its directories last changed.
    pub fn failed_loads(&self, version: u64) -> u32 {
        self.failed_loads.get(&version).map_or(0, |(n, _)| *n)
    }

    /// The newest version.
    pub fn newest(&self) -> Option<(u64, &Arc<dyn Servable>)> {
        self.versions.iter().next_back().map(|(v, s)| (*v, s))
    }

    /// Loads the versions under `model`'s base path that its policy picks (and those its
    /// labels name: its `version_labels`, each label directory's newest) and `known` does
    /// not hold yet, keeping those it holds (a version directory is never rewritten:
    /// exports are renamed into place whole) and unloading those no longer picked. A
    /// version that fails to load, or is ambiguous, is logged and left out until its
    /// directories change (an export copied in file by file, or fixed in place), when it
    /// is tried again; one whose load failed on the device or reading its variables is also
    /// tried again as the loaders' [`LoadRetries`](crate::LoadRetries) say.
    pub fn scan(
        model: &ModelConfig,
        known: &ModelVersions,
        loaders: &Loaders,
    ) -> std::io::Result<Self> {
        let policy = &model.model_version_policy;
        let mut claims: BTreeMap<u64, Vec<PathBuf>> = BTreeMap::new();
        let mut next = ModelVersions::default();
        for (version, dir, label) in version_dirs(&model.base_path)? {
            if let Some(label) = label {
                let newest = next.labels.entry(label).or_insert(version);
                *newest = (*newest).max(version);
            }
            claims.entry(version).or_default().push(dir);
        }
        next.labels.extend(model.version_labels.clone());
        let labelled: BTreeSet<u64> = next.labels.values().copied().collect();
        // Newest first, so that a latest-N policy counts the versions that did load.
        for (version, dirs) in claims.into_iter().rev() {
            if !policy.wants(version, next.versions.len()) && !labelled.contains(&version) {
                if known.versions.contains_key(&version) {
                    tracing::info!("unloaded version {version}: the policy serves {policy}");
                }
                continue;
            }
            let stamp = DirStamp::of(&dirs);
            let unchanged = known.stamps.get(&version) == Some(&stamp);
            next.dirs.insert(version, dirs.clone());
            next.stamps.insert(version, stamp);
            let mut failed = (0, Instant::now());
            if unchanged {
                if let Some(why) = known.refused.get(&version) {
                    failed = known.failed_loads.get(&version).copied().unwrap_or(failed);
                    let retries = loaders.retries;
                    let retry = matches!(why, LoadFault::Load { .. })
                        && failed.0 <= retries.max
                        && failed.1.elapsed() >= retries.interval;
                    if !retry {
                        next.refused.insert(version, why.clone());
                        next.failed_loads.insert(version, failed);
                        if known.ambiguous.contains(&version) {
                            next.ambiguous.insert(version);
                        }
                        continue;
                    }
                }
            } else if dirs.len() > 1 {
                if let Err(why) = one_export(version, &dirs) {
                    tracing::error!("{why}");
                    next.ambiguous.insert(version);
                    next.refused.insert(version, why);
                    continue;
                }
            }
            let dir = &dirs[0];
            let loaded_from = known.dirs.get(&version).and_then(|d| d.first());
            if let (Some(loaded), true) = (known.versions.get(&version), loaded_from == Some(dir)) {
                next.versions.insert(version, Arc::clone(loaded));
                continue;
            }
            match loaders.load(dir) {
                Ok(loaded) => {
                    tracing::info!("loaded version {version} from {}", dir.display());
                    next.versions.insert(version, loaded);
                }
                Err(e) => {
                    let failures = failed.0.saturating_add(1);
                    let loads = loaders.retries.max.saturating_add(1);
                    let left = match loads.saturating_sub(failures) {
                        _ if !matches!(e, LoadFault::Load { .. }) => String::new(),
                        0 => format!(
                            " (load {failures}, the last: tried again once its files change)"
                        ),
                        _ if failures == 1 => String::new(),
                        _ => format!(" (load {failures} of {loads})"),
                    };
                    tracing::error!("version {version} is not served{left}: {e}");
                    next.refused.insert(version, e);
                    next.failed_loads
                        .insert(version, (failures, Instant::now()));
                }
            }
        }
        // A label whose newest version did not load points at nothing.
        next.labels
            .retain(|_, version| next.versions.contains_key(version));
        Ok(next)
    }
}

/// Whether the directories naming `version` hold one export; if not, why it is ambiguous.
fn one_export(version: u64, dirs: &[PathBuf]) -> Result<(), LoadFault> {
    for other in &dirs[1..] {
        match same_export(&dirs[0], other) {
            Ok(true) => {}
            Ok(false) => {
                return Err(LoadFault::Ambiguous {
                    version,
                    dirs: dirs.to_vec(),
                })
            }
            Err(e) => {
                return Err(LoadFault::Incomparable {
                    version,
                    dirs: dirs.to_vec(),
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(())
}

/// Which version a URL asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Which {
    Newest,
    Version(u64),
    Label(String),
}

impl Which {
    pub(crate) fn parse(kind: &str, which: &str) -> Result<Self, ServeError> {
        match kind {
            "versions" => which
                .parse()
                .map(Which::Version)
                .map_err(|_| ServeError::BadRequest(format!("version '{which}' is not a number"))),
            "labels" => Ok(Which::Label(which.to_string())),
            other => Err(ServeError::NotFound(format!(
                "no such resource: /v1/models/{{model}}/{other}"
            ))),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Which::Newest => "any version".into(),
            Which::Version(v) => format!("version {v}"),
            Which::Label(l) => format!("label '{l}'"),
        }
    }
}
