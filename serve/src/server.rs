//! [`Server`]: the models and the versions served of each; its REST routes and serving
//! loop are in `http.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::budget::InstanceBudget;
use crate::error::ServeError;
use crate::limits::Limits;
use crate::loaders::Loaders;
use crate::metrics::Metrics;
use crate::model_config::ModelConfig;
use crate::servable::Servable;
use crate::versions::{ModelVersions, Which};

pub(crate) struct Model {
    config: ModelConfig,
    versions: RwLock<Arc<ModelVersions>>,
}

/// The models a server answers for.
#[derive(Clone)]
pub struct Server {
    pub(crate) models: Arc<BTreeMap<String, Model>>,
    loaders: Loaders,
    pub(crate) limits: Limits,
    pub(crate) budget: InstanceBudget,
    pub(crate) metrics: Arc<Metrics>,
}

impl Server {
    /// Loads every version of every model; a model none of whose versions loads is an error
    /// naming it and its base path.
    pub fn load(models: Vec<ModelConfig>, loaders: Loaders) -> anyhow::Result<Self> {
        let mut loaded = BTreeMap::new();
        for config in models {
            let policy = &config.model_version_policy;
            policy
                .check()
                .map_err(|e| anyhow::anyhow!("model '{}': {e}", config.name))?;
            let versions =
                ModelVersions::scan(&config, &Default::default(), &loaders).map_err(|e| {
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
                        "it needs numbered export directories, directly or one level down, \
                         and serves {policy} of them"
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
                        "model '{}': version_labels: '{label}' names version {version}, which \
                         {why}",
                        config.name
                    );
                }
            }
            if loaded.contains_key(&config.name) {
                anyhow::bail!("model '{}' is configured twice", config.name);
            }
            let model = Model {
                config: config.clone(),
                versions: RwLock::new(Arc::new(versions)),
            };
            loaded.insert(config.name, model);
        }
        let limits = Limits::default();
        Ok(Self {
            models: Arc::new(loaded),
            loaders,
            budget: InstanceBudget::new(
                limits.max_instances_per_request,
                limits.max_instances_in_flight,
            ),
            limits,
            metrics: Arc::default(),
        })
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
        for model in self.models.values() {
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
        let model = self.models.get(name).ok_or_else(|| {
            ServeError::NotFound(format!("Servable not found for request: model '{name}'"))
        })?;
        Ok(Arc::clone(
            &model.versions.read().unwrap_or_else(|e| e.into_inner()),
        ))
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
