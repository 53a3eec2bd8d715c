//! `ModelService` as TF Serving's: GetModelStatus, and HandleReloadConfigRequest, which
//! serves a new model list as a reloaded `--model-config-file` would.

use tonic::{Request, Response, Status};

use super::prediction_service::which;
use super::proto::tensorflow::error::Code;
use super::proto::tensorflow::serving::model_server_config::Config;
use super::proto::tensorflow::serving::model_service_server::ModelService;
use super::proto::tensorflow::serving::model_version_status::State;
use super::proto::tensorflow::serving::servable_version_policy::PolicyChoice;
use super::proto::tensorflow::serving::{
    GetModelStatusRequest, GetModelStatusResponse, ModelVersionStatus, ReloadConfigRequest,
    ReloadConfigResponse, StatusProto,
};
use crate::load_fault::LoadFault;
use crate::model_config::ModelConfig;
use crate::server::Server;
use crate::version_policy::VersionPolicy;
use crate::versions::Which;

#[tonic::async_trait]
impl ModelService for Server {
    /// The versions of the model, newest first: those served `AVAILABLE`, those that did
    /// not load `END` with the reason; only the one asked for when the spec names one.
    async fn get_model_status(
        &self,
        request: Request<GetModelStatusRequest>,
    ) -> Result<Response<GetModelStatusResponse>, Status> {
        let spec = request.into_inner().model_spec.unwrap_or_default();
        let versions = self.versions(&spec.name)?;
        let available = |version: u64| ModelVersionStatus {
            version: version as i64,
            state: State::Available as i32,
            status: Some(StatusProto {
                error_code: Code::Ok as i32,
                error_message: String::new(),
            }),
        };
        let ended = |version: u64, why: &LoadFault| ModelVersionStatus {
            version: version as i64,
            state: State::End as i32,
            status: Some(StatusProto {
                error_code: why.code() as i32,
                error_message: why.to_string(),
            }),
        };
        let statuses = match which(&spec)? {
            Which::Newest => {
                let mut all: Vec<_> = versions.versions.keys().map(|&v| available(v)).collect();
                all.extend(versions.refused.iter().map(|(&v, why)| ended(v, why)));
                all.sort_by_key(|status| std::cmp::Reverse(status.version));
                all
            }
            Which::Version(version) if versions.refused.contains_key(&version) => {
                vec![ended(version, &versions.refused[&version])]
            }
            chosen => vec![available(self.servable(&spec.name, &chosen)?.0)],
        };
        Ok(Response::new(GetModelStatusResponse {
            model_version_status: statuses,
        }))
    }

    async fn handle_reload_config_request(
        &self,
        request: Request<ReloadConfigRequest>,
    ) -> Result<Response<ReloadConfigResponse>, Status> {
        let config = request.into_inner().config.and_then(|c| c.config);
        let Some(Config::ModelConfigList(list)) = config else {
            return Err(Status::invalid_argument(
                "the request's config has no model_config_list",
            ));
        };
        let models = list
            .config
            .into_iter()
            .map(model_config)
            .collect::<Result<Vec<_>, _>>()?;
        let server = self.clone();
        let reconfigured = tokio::task::spawn_blocking(move || server.reconfigure(models))
            .await
            .map_err(|e| Status::internal(format!("the reload failed: {e}")))?;
        match reconfigured {
            Ok(()) => Ok(Response::new(ReloadConfigResponse {
                status: Some(StatusProto {
                    error_code: Code::Ok as i32,
                    error_message: String::new(),
                }),
            })),
            Err(e) => Err(Status::invalid_argument(format!(
                "not applied, the models served stay as they were: {e:#}"
            ))),
        }
    }
}

/// A model of a reload request as this server's; `latest` with no count is TF Serving's 1.
fn model_config(
    model: super::proto::tensorflow::serving::ModelConfig,
) -> Result<ModelConfig, Status> {
    let name = model.name;
    let refuse = |why: String| Status::invalid_argument(format!("model '{name}': {why}"));
    let policy = match model.model_version_policy.and_then(|p| p.policy_choice) {
        None => VersionPolicy::default(),
        Some(PolicyChoice::Latest(latest)) => VersionPolicy::Latest {
            num_versions: latest.num_versions.max(1) as usize,
        },
        Some(PolicyChoice::All(_)) => VersionPolicy::All {},
        Some(PolicyChoice::Specific(specific)) => VersionPolicy::Specific {
            versions: specific
                .versions
                .iter()
                .map(|&v| u64::try_from(v).map_err(|_| refuse(format!("version {v} is negative"))))
                .collect::<Result<_, _>>()?,
        },
    };
    let mut config = ModelConfig::new(name.clone(), model.base_path).with_version_policy(policy);
    for (label, version) in model.version_labels {
        let version = u64::try_from(version)
            .map_err(|_| refuse(format!("version_labels: '{label}' names version {version}")))?;
        config = config.with_version_label(label, version);
    }
    if !model.model_platform.is_empty() {
        config.model_platform = Some(model.model_platform);
    }
    Ok(config)
}
