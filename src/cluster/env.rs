//! The one place that reads the environment.

use super::{ClusterConfig, TfConfigError};

/// Name of the environment variable TensorFlow and Kubeflow write the cluster to.
pub const TF_CONFIG: &str = "TF_CONFIG";

/// The cluster this process belongs to, from `$TF_CONFIG` (unset = local).
pub fn cluster_from_env() -> Result<ClusterConfig, TfConfigError> {
    match std::env::var(TF_CONFIG) {
        Ok(text) => ClusterConfig::parse(&text),
        Err(_) => Ok(ClusterConfig::Local),
    }
}
