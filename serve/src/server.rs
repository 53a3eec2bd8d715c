//! [`Server`]: the models, the REST routes over them, and the watcher that loads new
//! versions.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use estimator::export::DType;
use estimator::Signature;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ServeError;
use crate::loaders::Loaders;
use crate::metrics::Metrics;
use crate::request::{
    classify_response, examples, predict_instances, predict_response, regress_response,
};
use crate::servable::Servable;
use crate::versions::ModelVersions;

/// One model to serve: its name in the URLs and the directory holding its versions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ModelConfig {
    /// The name in `/v1/models/{name}`.
    pub name: String,
    /// The directory of numbered version directories.
    pub base_path: PathBuf,
}

/// TF Serving's `--model_config_file`, JSON form:
/// `{"model_config_list": {"config": [{"name": …, "base_path": …}]}}`.
#[derive(Debug, Deserialize)]
pub struct ModelConfigFile {
    model_config_list: ModelConfigList,
}

#[derive(Debug, Deserialize)]
struct ModelConfigList {
    config: Vec<ModelConfig>,
}

impl ModelConfigFile {
    /// The models the file lists.
    pub fn models(self) -> Vec<ModelConfig> {
        self.model_config_list.config
    }
}

/// Request bodies above this many bytes are refused with 413 (TF Serving's default).
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;

struct Model {
    config: ModelConfig,
    versions: RwLock<Arc<ModelVersions>>,
}

/// The models a server answers for.
#[derive(Clone)]
pub struct Server {
    models: Arc<BTreeMap<String, Model>>,
    loaders: Loaders,
    body_limit: usize,
    metrics: Arc<Metrics>,
}

impl Server {
    /// Loads every version of every model; a model none of whose versions loads is an error
    /// naming it and its base path.
    pub fn load(models: Vec<ModelConfig>, loaders: Loaders) -> anyhow::Result<Self> {
        let mut loaded = BTreeMap::new();
        for config in models {
            let versions = ModelVersions::scan(&config.base_path, &Default::default(), &loaders)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "model '{}': {}: {e}",
                        config.name,
                        config.base_path.display()
                    )
                })?;
            if versions.versions.is_empty() {
                let why = match versions.refused.iter().next_back() {
                    Some((version, e)) => format!("version {version}: {e}"),
                    None => "numbered export directories, directly or one level down".into(),
                };
                anyhow::bail!(
                    "model '{}': no version under {} could be loaded ({why})",
                    config.name,
                    config.base_path.display()
                );
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
        Ok(Self {
            models: Arc::new(loaded),
            loaders,
            body_limit: DEFAULT_BODY_LIMIT,
            metrics: Arc::default(),
        })
    }

    /// Refuses request bodies above `bytes` with 413.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Looks for new (or removed) versions of every model once; versions already loaded
    /// are kept, so requests under way finish on the version they started with.
    pub fn rescan(&self) {
        for model in self.models.values() {
            let known = Arc::clone(&model.versions.read().unwrap_or_else(|e| e.into_inner()));
            match ModelVersions::scan(&model.config.base_path, &known, &self.loaders) {
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

    /// The REST routes.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/models/{model}", get(status).post(call))
            .route("/v1/models/{model}/metadata", get(metadata))
            .route(
                "/v1/models/{model}/{kind}/{which}",
                get(status_of).post(call_on),
            )
            .route(
                "/v1/models/{model}/{kind}/{which}/metadata",
                get(metadata_of),
            )
            .route("/monitoring/prometheus/metrics", get(prometheus))
            .layer(DefaultBodyLimit::max(self.body_limit))
            .with_state(self.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then finishes the requests under
    /// way; a rescan runs every `poll` (TF Serving's
    /// `--file_system_poll_wait_seconds`; zero: never).
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        poll: Duration,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let watcher = (!poll.is_zero()).then(|| {
            let server = self.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(poll);
                every.tick().await;
                loop {
                    every.tick().await;
                    let server = server.clone();
                    let _ = tokio::task::spawn_blocking(move || server.rescan()).await;
                }
            })
        });
        let served = axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await;
        if let Some(watcher) = watcher {
            watcher.abort();
        }
        served
    }

    fn versions(&self, name: &str) -> Result<Arc<ModelVersions>, ServeError> {
        let model = self.models.get(name).ok_or_else(|| {
            ServeError::NotFound(format!("Servable not found for request: model '{name}'"))
        })?;
        Ok(Arc::clone(
            &model.versions.read().unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// The version `which` selects of model `name`.
    fn servable(&self, name: &str, which: &Which) -> Result<(u64, Arc<dyn Servable>), ServeError> {
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

/// Which version a URL asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Which {
    Newest,
    Version(u64),
    Label(String),
}

impl Which {
    fn parse(kind: &str, which: &str) -> Result<Self, ServeError> {
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

    fn describe(&self) -> String {
        match self {
            Which::Newest => "any version".into(),
            Which::Version(v) => format!("version {v}"),
            Which::Label(l) => format!("label '{l}'"),
        }
    }
}

/// `name:verb` as its two parts.
fn split_verb(segment: &str) -> Result<(&str, &str), ServeError> {
    segment.rsplit_once(':').ok_or_else(|| {
        ServeError::NotFound(format!(
            "'{segment}' names no method: POST to …:predict, …:classify or …:regress"
        ))
    })
}

type Reply = Result<Json<Value>, ServeError>;

async fn status(State(server): State<Server>, Path(model): Path<String>) -> Reply {
    let versions = server.versions(&model)?;
    let list: Vec<Value> = versions
        .versions
        .keys()
        .rev()
        .map(|v| version_status(*v))
        .collect();
    Ok(Json(json!({ "model_version_status": list })))
}

async fn status_of(
    State(server): State<Server>,
    Path((model, kind, which)): Path<(String, String, String)>,
) -> Reply {
    let which = Which::parse(&kind, &which)?;
    let (version, _) = server.servable(&model, &which)?;
    Ok(Json(
        json!({ "model_version_status": [version_status(version)] }),
    ))
}

fn version_status(version: u64) -> Value {
    json!({
        "version": version.to_string(),
        "state": "AVAILABLE",
        "status": { "error_code": "OK", "error_message": "" }
    })
}

async fn metadata(State(server): State<Server>, Path(model): Path<String>) -> Reply {
    let (version, servable) = server.servable(&model, &Which::Newest)?;
    Ok(Json(metadata_json(&model, version, servable.signature())))
}

async fn metadata_of(
    State(server): State<Server>,
    Path((model, kind, which)): Path<(String, String, String)>,
) -> Reply {
    let which = Which::parse(&kind, &which)?;
    let (version, servable) = server.servable(&model, &which)?;
    Ok(Json(metadata_json(&model, version, servable.signature())))
}

/// TF Serving's metadata answer: the `serving_default` signature.
fn metadata_json(model: &str, version: u64, signature: &Signature) -> Value {
    let tensor = |dtype: &str, per_example: &[usize], name: &str| {
        let mut dims = vec![json!({ "size": "-1", "name": "" })];
        dims.extend(
            per_example
                .iter()
                .map(|d| json!({ "size": d.to_string(), "name": "" })),
        );
        json!({
            "dtype": dtype,
            "tensor_shape": { "dim": dims, "unknown_rank": false },
            "name": format!("{name}:0")
        })
    };
    let inputs: serde_json::Map<String, Value> = signature
        .inputs
        .iter()
        .map(|i| {
            let dtype = match i.dtype {
                DType::Float32 => "DT_FLOAT",
                DType::Int64 => "DT_INT64",
                DType::String => "DT_STRING",
            };
            (i.name.clone(), tensor(dtype, &i.shape, &i.name))
        })
        .collect();
    let outputs: serde_json::Map<String, Value> = signature
        .outputs
        .iter()
        .map(|key| {
            let dtype = match key.as_str() {
                "class_ids" | "all_class_ids" => "DT_INT64",
                "classes" | "all_classes" => "DT_STRING",
                _ => "DT_FLOAT",
            };
            (key.clone(), tensor(dtype, &[], key))
        })
        .collect();
    json!({
        "model_spec": { "name": model, "signature_name": "", "version": version.to_string() },
        "metadata": { "signature_def": {
            "signature_def": { "serving_default": {
                "inputs": inputs,
                "outputs": outputs,
                "method_name": "tensorflow/serving/predict"
            }},
        }}
    })
}

async fn prometheus(State(server): State<Server>) -> String {
    server.metrics.render()
}

/// A request body, or the 413 / 400 TF Serving gives when it cannot be read.
fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ServeError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::TooLarge(format!("the request body is above the limit: {rejection}"))
        } else {
            ServeError::BadRequest(format!("cannot read the request body: {rejection}"))
        }
    })
}

async fn call(
    State(server): State<Server>,
    Path(segment): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let (model, verb) = split_verb(&segment)?;
    run(
        server,
        model.to_string(),
        Which::Newest,
        verb.to_string(),
        body,
    )
    .await
}

async fn call_on(
    State(server): State<Server>,
    Path((model, kind, segment)): Path<(String, String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let (which, verb) = split_verb(&segment)?;
    let which = Which::parse(&kind, which)?;
    run(server, model, which, verb.to_string(), body).await
}

/// Runs `verb` on the selected version, off the async threads; counts and logs it.
async fn run(
    server: Server,
    model: String,
    which: Which,
    verb: String,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    let started = std::time::Instant::now();
    let answer = answer_request(&server, &model, &which, &verb, body).await;
    let elapsed = started.elapsed();
    if server.models.contains_key(&model) {
        server
            .metrics
            .record(&model, &verb, answer.is_ok(), elapsed);
    }
    let status = answer
        .as_ref()
        .map_or_else(|e| e.status(), |_| StatusCode::OK);
    tracing::debug!(
        "POST {model} {} :{verb} -> {} in {elapsed:.2?}",
        which.describe(),
        status.as_u16()
    );
    answer.map(Json)
}

async fn answer_request(
    server: &Server,
    model: &str,
    which: &Which,
    verb: &str,
    body: Result<Bytes, BytesRejection>,
) -> Result<Value, ServeError> {
    let body: Value = serde_json::from_slice(&body_bytes(body)?)
        .map_err(|e| ServeError::BadRequest(format!("the request body is not JSON: {e}")))?;
    let (_, servable) = server.servable(model, which)?;
    let verb = verb.to_string();
    tokio::task::spawn_blocking(move || answer(&*servable, &verb, &body))
        .await
        .map_err(|e| ServeError::Internal(format!("the model failed: {e}")))?
}

fn answer(servable: &dyn Servable, verb: &str, body: &Value) -> Result<Value, ServeError> {
    let signature = servable.signature();
    match verb {
        "predict" => {
            let (format, instances) = predict_instances(body, signature)?;
            let predictions = servable.predict(&instances)?;
            Ok(predict_response(format, signature, predictions))
        }
        "classify" => classify_response(&servable.predict(&examples(body)?)?),
        "regress" => regress_response(&servable.predict(&examples(body)?)?),
        other => Err(ServeError::BadRequest(format!(
            "unknown method '{other}': predict, classify or regress"
        ))),
    }
}
