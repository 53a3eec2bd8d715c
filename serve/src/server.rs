//! [`Server`]: the models and the versions served of each; its REST routes and serving
//! loop are in `http.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::budget::InstanceBudget;
use crate::error::ServeError;
use crate::grpc_channel_arguments::GrpcChannelArguments;
use crate::limits::Limits;
use crate::loaders::Loaders;
use crate::metrics::Metrics;
use crate::model_config::ModelConfig;
use crate::monitoring_config::MonitoringConfig;
use crate::servable::Servable;
use crate::ssl_config::SslConfig;
use crate::versions::{ModelVersions, Which};

pub(crate) struct Model {
    config: ModelConfig,
    versions: RwLock<Arc<ModelVersions>>,
}

/// Model name → the model.
type Models = BTreeMap<String, Arc<Model>>;

/// The models a server answers for.
#[derive(Clone)]
pub struct Server {
    models: Arc<RwLock<Models>>,
    /// Held while versions load (a rescan, a new model config), so that two never load
    /// the same version side by side.
    loading: Arc<Mutex<()>>,
    pub(crate) loaders: Loaders,
    pub(crate) limits: Limits,
    pub(crate) budget: InstanceBudget,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) monitoring: MonitoringConfig,
    pub(crate) grpc_tls: Option<SslConfig>,
    pub(crate) cors: bool,
    pub(crate) grpc_health_check: bool,
    pub(crate) grpc_arguments: GrpcChannelArguments,
    /// Predict answers' numbers packed in `tensor_content`.
    pub(crate) tensor_content: bool,
}

impl Server {
    /// Loads the versions of every model that its policy picks; a model none of whose
    /// versions loads is an error naming it and its base path.
    pub fn load(models: Vec<ModelConfig>, loaders: Loaders) -> anyhow::Result<Self> {
        let loaded = load_models(models, &Models::new(), &loaders)?;
        let limits = Limits::default();
        Ok(Self {
            models: Arc::new(RwLock::new(loaded)),
            loading: Arc::default(),
            loaders,
            budget: InstanceBudget::new(
                limits.max_instances_per_request,
                limits.max_instances_in_flight,
            ),
            limits,
            metrics: Arc::default(),
            monitoring: MonitoringConfig::default(),
            grpc_tls: None,
            cors: false,
            grpc_health_check: false,
            tensor_content: false,
            grpc_arguments: GrpcChannelArguments::default(),
        })
    }

    /// Serves `models` from now on (TF Serving's reload of its model config): models no
    /// longer listed are unloaded, new ones loaded, and those whose settings changed
    /// rescanned, keeping the versions they still serve. A list [`Server::load`] would
    /// refuse is refused whole, and the models served before stay as they were.
    pub fn reconfigure(&self, models: Vec<ModelConfig>) -> anyhow::Result<()> {
        let _loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        let before = self
            .models
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let after = load_models(models, &before, &self.loaders)?;
        for name in before.keys().filter(|name| !after.contains_key(*name)) {
            tracing::info!("model '{name}': unloaded, as the model config no longer lists it");
        }
        for (name, model) in &after {
            match before.get(name) {
                None => tracing::info!("model '{name}': added by the model config"),
                Some(old) if !Arc::ptr_eq(old, model) => {
                    tracing::info!("model '{name}': its settings changed in the model config")
                }
                Some(_) => {}
            }
        }
        *self.models.write().unwrap_or_else(|e| e.into_inner()) = after;
        Ok(())
    }

    /// The names of the models served now.
    pub fn model_names(&self) -> Vec<String> {
        let models = self.models.read().unwrap_or_else(|e| e.into_inner());
        models.keys().cloned().collect()
    }

    pub(crate) fn serves(&self, name: &str) -> bool {
        let models = self.models.read().unwrap_or_else(|e| e.into_inner());
        models.contains_key(name)
    }

    /// Serves within `limits` (request sizes, the decoding budget, connections and their
    /// timeouts) instead of [`Limits::default`].
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.budget = InstanceBudget::new(
            limits.max_instances_per_request,
            limits.max_instances_in_flight,
        );
        self.limits = limits;
        self
    }

    /// Serves the Prometheus metrics as `monitoring` says instead of at TF Serving's path.
    pub fn with_monitoring(mut self, monitoring: MonitoringConfig) -> Self {
        self.monitoring = monitoring;
        self
    }

    /// Serves the gRPC API over TLS as `ssl` says (TF Serving's SSL config), not in the
    /// clear.
    pub fn with_grpc_tls(mut self, ssl: SslConfig) -> Self {
        self.grpc_tls = Some(ssl);
        self
    }

    /// Lets web pages of any origin read the REST API's answers (TF Serving's
    /// `--rest_api_enable_cors_support`): the CORS headers on every answer of the model
    /// URLs.
    pub fn with_cors(mut self, cors: bool) -> Self {
        self.cors = cors;
        self
    }

    /// Serves gRPC's standard health service (`grpc.health.v1.Health`, as Kubernetes' gRPC
    /// probes call it) beside the gRPC API: TF Serving's `--enable_grpc_healthcheck_service`.
    pub fn with_grpc_health_check(mut self, on: bool) -> Self {
        self.grpc_health_check = on;
        self
    }

    /// Packs the float and integer outputs of gRPC Predict answers into `tensor_content`,
    /// little-endian, instead of the repeated fields (TF Serving's
    /// `--enable_serialization_as_tensor_content`): one copy of the bytes for a client
    /// reading them as an array. String outputs stay in `string_val`, as in TF Serving.
    pub fn with_serialization_as_tensor_content(mut self, on: bool) -> Self {
        self.tensor_content = on;
        self
    }

    /// Serves the gRPC API with `arguments` (TF Serving's `--grpc_channel_arguments`): its
    /// message limits, keepalive pings, connection age and streams per connection.
    pub fn with_grpc_channel_arguments(mut self, arguments: GrpcChannelArguments) -> Self {
        self.grpc_arguments = arguments;
        self
    }

    /// Refuses request bodies above `bytes` with 413.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.limits.max_body_bytes = bytes;
        self
    }

    /// What this server accepts.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Looks for new (or removed) versions of every model once; versions already loaded
    /// are kept, so requests under way finish on the version they started with.
    pub fn rescan(&self) {
        let _loading = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        let models: Vec<Arc<Model>> = {
            let models = self.models.read().unwrap_or_else(|e| e.into_inner());
            models.values().cloned().collect()
        };
        for model in models {
            let known = Arc::clone(&model.versions.read().unwrap_or_else(|e| e.into_inner()));
            match ModelVersions::scan(&model.config, &known, &self.loaders) {
                // A base path that lost every loadable version keeps serving the old ones.
                Ok(next) if next.versions.is_empty() => {}
                Ok(next) => {
                    if next.versions.keys().ne(known.versions.keys()) {
                        tracing::info!(
                            "model '{}': serving versions {:?}",
                            model.config.name,
                            next.versions.keys().collect::<Vec<_>>()
                        );
                    }
                    *model.versions.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
                }
                Err(e) => tracing::warn!(
                    "model '{}': cannot read {}: {e}",
                    model.config.name,
                    model.config.base_path.display()
                ),
            }
        }
    }

    /// The versions of model `name` served now: loaded, refused (and why), labels.
    pub fn model_versions(&self, name: &str) -> Option<Arc<ModelVersions>> {
        self.versions(name).ok()
    }

    pub(crate) fn versions(&self, name: &str) -> Result<Arc<ModelVersions>, ServeError> {
        let model = {
            let models = self.models.read().unwrap_or_else(|e| e.into_inner());
            models.get(name).cloned()
        };
        let model = model.ok_or_else(|| {
            ServeError::NotFound(format!("Servable not found for request: model '{name}'"))
        })?;
        let versions = Arc::clone(&model.versions.read().unwrap_or_else(|e| e.into_inner()));
        Ok(versions)
    }

    /// The version `which` selects of model `name`.
    pub(crate) fn servable(
        &self,
        name: &str,
        which: &Which,
    ) -> Result<(u64, Arc<dyn Servable>), ServeError> {
        let versions = self.versions(name)?;
        let version = match which {
            Which::Newest => versions.newest().map(|(v, _)| v),
            Which::Version(v) => Some(*v),
            Which::Label(label) => versions.labels.get(label).copied(),
        };
        version
            .and_then(|v| versions.versions.get(&v).map(|s| (v, Arc::clone(s))))
            .ok_or_else(|| {
                ServeError::NotFound(format!(
                    "Servable not found for request: model '{name}', {}",
                    which.describe()
                ))
            })
    }
}

/// The models `configs` lists, each with the versions its policy and labels pick; a model
/// `known` holds with the same settings is kept as it is, and one whose settings changed
/// keeps the versions it still serves. Refused, naming the model: a policy that serves
/// nothing, a name listed twice, no version that loads, a label naming a version that does
/// not serve.
fn load_models(
    configs: Vec<ModelConfig>,
    known: &Models,
    loaders: &Loaders,
) -> anyhow::Result<Models> {
    let mut loaded = Models::new();
    for config in configs {
        if loaded.contains_key(&config.name) {
            anyhow::bail!("model '{}' is configured twice", config.name);
        }
        let policy = &config.model_version_policy;
        policy
            .check()
            .map_err(|e| anyhow::anyhow!("model '{}': {e}", config.name))?;
        let before = known.get(&config.name);
        if let Some(model) = before.filter(|model| model.config == config) {
            loaded.insert(config.name, Arc::clone(model));
            continue;
        }
        let before = before.map_or_else(Default::default, |model| {
            Arc::clone(&model.versions.read().unwrap_or_else(|e| e.into_inner()))
        });
        let versions = ModelVersions::scan(&config, &before, loaders).map_err(|e| {
            anyhow::anyhow!(
                "model '{}': {}: {e}",
                config.name,
                config.base_path.display()
            )
        })?;
        if versions.versions.is_empty() {
            let why = match versions.refused.iter().next_back() {
                Some((version, e)) => format!("version {version}: {e}"),
                None => format!(
                    "it needs numbered export directories, directly or one level down, and \
                     serves {policy} of them"
                ),
            };
            anyhow::bail!(
                "model '{}': no version under {} could be loaded ({why})",
                config.name,
                config.base_path.display()
            );
        }
        // As TF Serving: a label must name a version that serves.
        for (label, version) in &config.version_labels {
            if !versions.versions.contains_key(version) {
                let why = match versions.refused.get(version) {
                    Some(e) => format!("did not load: {e}"),
                    None => format!("is not under {}", config.base_path.display()),
                };
                anyhow::bail!(
                    "model '{}': version_labels: '{label}' names version {version}, which {why}",
                    config.name
                );
            }
        }
        let model = Model {
            config: config.clone(),
            versions: RwLock::new(Arc::new(versions)),
        };
        loaded.insert(config.name, Arc::new(model));
    }
    Ok(loaded)
}

/// A server of one model whose only version is a signature: for the tests of the requests
/// a model would be asked.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use estimator::export::Instance;
    use estimator::Signature;

    /// Refuses every prediction: the tests using it look at what comes before one.
    struct SignatureOnly(Signature);

    impl Servable for SignatureOnly {
        fn signature(&self) -> &Signature {
            &self.0
        }

        fn predict(&self, _: &[Instance]) -> crate::servable::Predictions {
            Err(ServeError::Internal("no model here".into()))
        }
    }

    /// Model `name`, of `signature`, as version 1, served within `limits`.
    pub(crate) fn serving(name: &str, signature: Signature, limits: Limits) -> Server {
        let mut versions = ModelVersions::default();
        versions
            .versions
            .insert(1, Arc::new(SignatureOnly(signature)));
        let model = Model {
            config: ModelConfig::new(name, "/nowhere"),
            versions: RwLock::new(Arc::new(versions)),
        };
        let server = Server::load(Vec::new(), Loaders::new()).expect("no model to load");
        *server.models.write().unwrap() = Models::from([(name.to_string(), Arc::new(model))]);
        server.with_limits(limits)
    }
}
