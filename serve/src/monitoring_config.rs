//! [`MonitoringConfig`]: TF Serving's `--monitoring_config_file`, which says whether and
//! where the Prometheus metrics are served.

use anyhow::bail;
use prost_reflect::Value;

use crate::text_proto;

/// Where TF Serving serves the metrics when its config names no path.
pub const DEFAULT_METRICS_PATH: &str = "/monitoring/prometheus/metrics";

/// Whether and where the Prometheus metrics are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitoringConfig {
    /// The metrics' path; `None`: not served.
    pub prometheus_path: Option<String>,
}

impl MonitoringConfig {
    /// A monitoring config file as TF Serving's are written
    /// (`prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }`): the
    /// metrics are served only when `enable` is true, at `path` (TF Serving's path when
    /// empty), which must start with `/` and stay clear of the model URLs (`/v1/`).
    pub fn from_text_proto(text: &str) -> anyhow::Result<Self> {
        let message = text_proto::parse("tensorflow.serving.MonitoringConfig", text, &[])?;
        let field = message.get_field_by_name("prometheus_config");
        let Some(Value::Message(prometheus)) = field.as_deref() else {
            return Ok(Self {
                prometheus_path: None,
            });
        };
        let enabled = prometheus.get_field_by_name("enable");
        if enabled.as_deref().and_then(Value::as_bool) != Some(true) {
            return Ok(Self {
                prometheus_path: None,
            });
        }
        let path = prometheus.get_field_by_name("path");
        let path = match path.as_deref().and_then(Value::as_str) {
            None | Some("") => DEFAULT_METRICS_PATH,
            Some(path) => path,
        };
        if !path.starts_with('/') || path.starts_with("/v1/") || path.contains(['{', '}']) {
            bail!("prometheus_config path '{path}': must start with '/', outside /v1/, without braces");
        }
        Ok(Self {
            prometheus_path: Some(path.to_string()),
        })
    }
}

impl Default for MonitoringConfig {
    /// The metrics at TF Serving's path.
    fn default() -> Self {
        Self {
            prometheus_path: Some(DEFAULT_METRICS_PATH.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tf_serving_s_monitoring_config_and_serves_metrics_only_where_it_says() {
        let path = |text: &str| {
            MonitoringConfig::from_text_proto(text)
                .unwrap()
                .prometheus_path
        };
        let tf_serving = "prometheus_config {\n  enable: true,\n  path: \"/metrics\"\n}\n";
        assert_eq!(path(tf_serving).as_deref(), Some("/metrics"));
        assert_eq!(
            path("prometheus_config { enable: true }").as_deref(),
            Some(DEFAULT_METRICS_PATH)
        );
        assert_eq!(path("prometheus_config { path: '/metrics' }"), None);
        assert_eq!(path(""), None);
        let error = |text: &str| {
            MonitoringConfig::from_text_proto(text)
                .unwrap_err()
                .to_string()
        };
        assert!(
            error("prometheus_config { enable: true path: 'metrics' }").contains("start with '/'")
        );
        assert!(error("prometheus_config { enable: true path: '/v1/models' }").contains("/v1/"));
        let typo = error("prometheus_config {\n  enabled: true\n}");
        assert!(
            typo.starts_with("line 2, column 3: field 'enabled' not found"),
            "{typo}"
        );
    }
}
