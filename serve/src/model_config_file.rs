//! [`ModelConfigFile`]: TF Serving's `--model_config_file`, in protobuf text format (TF
//! Serving's own `models.config`) or in its JSON form.

use anyhow::{anyhow, Context};
use prost_reflect::SerializeOptions;
use serde::Deserialize;
use serde_json::Value;

use crate::model_config::ModelConfig;
use crate::text_proto;

/// TF Serving's settings this server does not have: named when a file sets one, instead of
/// a bare "not found".
const NOT_SUPPORTED: [&str; 3] = ["logging_config", "custom_model_config", "model_type"];

/// TF Serving's `--model_config_file`: `model_config_list { config { name: 'iris' base_path:
/// '/models/iris' } }` in protobuf text format, or `{"model_config_list": {"config":
/// [{"name": …, "base_path": …}]}}` in JSON. A field it does not know is an error naming
/// it, rather than a setting silently dropped.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfigFile {
    model_config_list: ModelConfigList,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelConfigList {
    config: Vec<ModelConfig>,
}

impl ModelConfigFile {
    /// The models the file lists.
    pub fn models(self) -> Vec<ModelConfig> {
        self.model_config_list.config
    }

    /// Parses a file's text: JSON when it starts with `{`, protobuf text format otherwise.
    /// An error names the line and column, or the model entry, at fault.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        if text.trim_start().starts_with('{') {
            serde_json::from_str(text).context("not a model_config_list")
        } else {
            Self::from_text_proto(text)
        }
    }

    /// Parses TF Serving's protobuf text format, as its `models.config` files are written.
    pub fn from_text_proto(text: &str) -> anyhow::Result<Self> {
        let message =
            text_proto::parse("tensorflow.serving.ModelServerConfig", text, &NOT_SUPPORTED)?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .stringify_64_bit_integers(false);
        let mut value = message.serialize_with_options(serde_json::value::Serializer, &options)?;
        let configs = match value
            .get_mut("model_config_list")
            .and_then(|list| list.get_mut("config"))
            .map(Value::take)
        {
            Some(Value::Array(configs)) => configs,
            _ => anyhow::bail!("no model_config_list {{ config {{ … }} }}: no model to serve"),
        };
        let config = configs
            .into_iter()
            .enumerate()
            .map(|(index, mut config)| {
                // A policy with no choice set is the default (proto3 cannot tell them apart).
                if config.get("model_version_policy") == Some(&Value::Object(Default::default())) {
                    config
                        .as_object_mut()
                        .map(|c| c.remove("model_version_policy"));
                }
                let name = config
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                serde_json::from_value(config).map_err(|e| match name {
                    Some(name) => anyhow!("config {} ('{name}'): {e}", index + 1),
                    None => anyhow!("config {}: {e}", index + 1),
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(ModelConfigFile {
            model_config_list: ModelConfigList { config },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version_policy::VersionPolicy;

    #[test]
    fn reads_tf_serving_s_text_format_as_its_files_are_written() {
        let text = r#"
# Two models, as TF Serving's documentation writes them.
model_config_list {
  config {
    name: 'iris'
    base_path: "/models/iris/"
    model_platform: 'tensorflow'
    model_version_policy { specific { versions: 42 versions: 43 } }
    version_labels { key: 'stable' value: 42 }
    version_labels { key: 'canary' value: 43 }
  }
  config: < name: "ctr", base_path: "/models/ctr", model_version_policy { latest {} } >
  config { name: 'two' base_path: '/m' model_version_policy { latest { num_versions: 2 } } }
}
"#;
        let models = ModelConfigFile::from_text_proto(text).unwrap().models();
        let iris = ModelConfig::new("iris", "/models/iris/")
            .with_version_policy(VersionPolicy::Specific {
                versions: vec![42, 43],
            })
            .with_version_label("stable", 42)
            .with_version_label("canary", 43);
        let iris = ModelConfig {
            model_platform: Some("tensorflow".into()),
            ..iris
        };
        assert_eq!(models[0], iris);
        // `latest {}` is proto3's num_versions 0, which TF Serving serves as its default 1.
        assert_eq!(models[1], ModelConfig::new("ctr", "/models/ctr"));
        let two = VersionPolicy::Latest { num_versions: 2 };
        assert_eq!(models[2].model_version_policy, two);
    }

    #[test]
    fn a_text_format_error_names_its_line_and_column_or_the_model_entry() {
        let error = |text: &str| {
            ModelConfigFile::from_text_proto(text)
                .err()
                .unwrap()
                .to_string()
        };
        let typo = "model_config_list {\n  config {\n    name: 'iris'\n    base_pth: '/m'\n";
        let message = error(typo);
        assert!(
            message.starts_with("line 4, column 5: field 'base_pth' not found"),
            "{message}"
        );
        let logging =
            "model_config_list { config { name: 'a' base_path: '/m'\n logging_config {} } }";
        let message = error(logging);
        assert_eq!(
            message,
            "line 2, column 2: logging_config: TF Serving's setting, which estimator-serve does \
             not have"
        );
        let missing = "model_config_list { config { name: 'a' base_path: '/m' }\n\
                       config { name: 'b' } }";
        let message = error(missing);
        assert_eq!(message, "config 2 ('b'): missing field `base_path`");
        let unclosed = error("model_config_list { config { name: 'a'");
        assert!(unclosed.contains("reached end of input"), "{unclosed}");
        assert!(error("").contains("no model to serve"));
        let negative = error(
            "model_config_list { config { name: 'a' base_path: '/m'\n\
                              version_labels { key: 'x' value: -1 } } }",
        );
        assert!(
            negative.starts_with("config 1 ('a'): invalid value: integer `-1`"),
            "{negative}"
        );
    }
}
