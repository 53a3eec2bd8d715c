//! [`ModelConfig`]: one model to serve, as an entry of TF Serving's `model_config_list`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::version_policy::VersionPolicy;

/// One model to serve: its name in the URLs, the directory holding its versions, which of
/// them to serve, and labels naming versions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name in `/v1/models/{name}`.
    pub name: String,
    /// The directory of numbered version directories.
    pub base_path: PathBuf,
    /// Which versions to serve (default: the latest, as TF Serving).
    #[serde(default)]
    pub model_version_policy: VersionPolicy,
    /// Labels naming versions, for `/labels/{label}` (TF Serving's `version_labels`, as
    /// `{"stable": 7, "canary": 9}`); the versions they name are served too, and a label
    /// of the same name as a label directory replaces it.
    #[serde(default)]
    pub version_labels: BTreeMap<String, u64>,
    /// TF Serving's platform (`"tensorflow"`): accepted, so that its files read, and
    /// ignored.
    #[serde(default)]
    pub model_platform: Option<String>,
}

impl ModelConfig {
    /// Model `name` with its versions under `base_path`, serving the latest.
    pub fn new(name: impl Into<String>, base_path: impl Into<PathBuf>) -> Self {
        ModelConfig {
            name: name.into(),
            base_path: base_path.into(),
            model_version_policy: VersionPolicy::default(),
            version_labels: BTreeMap::new(),
            model_platform: None,
        }
    }

    /// Serves the versions `policy` picks instead of the latest.
    pub fn with_version_policy(mut self, policy: VersionPolicy) -> Self {
        self.model_version_policy = policy;
        self
    }

    /// Names `version` `label` (and so serves it).
    pub fn with_version_label(mut self, label: impl Into<String>, version: u64) -> Self {
        self.version_labels.insert(label.into(), version);
        self
    }
}
