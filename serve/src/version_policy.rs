//! [`VersionPolicy`]: which of a model's versions are loaded and served (TF Serving's
//! `model_version_policy`).

use std::fmt;

use serde::Deserialize;

/// Which versions of a model to serve, as TF Serving's `model_version_policy`, in its JSON
/// form: `{"latest": {"num_versions": 2}}`, `{"all": {}}` or `{"specific": {"versions":
/// [7, 9]}}`. Whatever the policy, the newest version under each label directory
/// (`export/best/…`) is served too, so that its label answers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum VersionPolicy {
    /// The newest `num_versions` versions that load (TF Serving's default, with 1): a
    /// newer version that fails to load leaves the older one served.
    Latest {
        /// How many (1 when not given, as TF Serving's proto3 default).
        #[serde(default = "one")]
        num_versions: usize,
    },
    /// Every version.
    All {},
    /// These versions (those of them that exist).
    Specific {
        /// The version numbers.
        #[serde(default)]
        versions: Vec<u64>,
    },
}

fn one() -> usize {
    1
}

impl Default for VersionPolicy {
    fn default() -> Self {
        VersionPolicy::Latest { num_versions: 1 }
    }
}

impl VersionPolicy {
    /// Whether the policy can serve anything: a count of 0 or an empty list cannot.
    pub fn check(&self) -> anyhow::Result<()> {
        match self {
            VersionPolicy::Latest { num_versions: 0 } => {
                anyhow::bail!("model_version_policy latest: num_versions must be at least 1")
            }
            VersionPolicy::Specific { versions } if versions.is_empty() => {
                anyhow::bail!("model_version_policy specific: versions must list at least one")
            }
            _ => Ok(()),
        }
    }

    /// Whether `version` is served, when `loaded` newer versions already are (versions are
    /// looked at newest first).
    pub fn wants(&self, version: u64, loaded: usize) -> bool {
        match self {
            VersionPolicy::Latest { num_versions } => loaded < *num_versions,
            VersionPolicy::All {} => true,
            VersionPolicy::Specific { versions } => versions.contains(&version),
        }
    }
}

impl fmt::Display for VersionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionPolicy::Latest { num_versions } => write!(f, "the latest {num_versions}"),
            VersionPolicy::All {} => write!(f, "all"),
            VersionPolicy::Specific { versions } => write!(f, "specific {versions:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tf_serving_s_json_forms_and_refuses_what_serves_nothing() {
        let read = |text: &str| serde_json::from_str::<VersionPolicy>(text);
        assert_eq!(
            read(r#"{"latest": {"num_versions": 2}}"#).unwrap(),
            VersionPolicy::Latest { num_versions: 2 }
        );
        assert_eq!(read(r#"{"all": {}}"#).unwrap(), VersionPolicy::All {});
        let specific = read(r#"{"specific": {"versions": [7, 9]}}"#).unwrap();
        assert!(specific.wants(9, 5) && !specific.wants(8, 0));
        assert!(read(r#"{"newest": {}}"#).is_err());
        assert!(read(r#"{"latest": {"num_version": 2}}"#).is_err());
        let latest = VersionPolicy::default();
        assert!(latest.wants(1, 0) && !latest.wants(1, 1));
        assert!(VersionPolicy::Latest { num_versions: 0 }.check().is_err());
        let empty = VersionPolicy::Specific { versions: vec![] };
        assert!(empty
            .check()
            .unwrap_err()
            .to_string()
            .contains("at least one"));
    }
}
