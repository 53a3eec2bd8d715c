//! The flags of `estimator-serve` and what they configure: the models, the limits, the
//! batching, the load retries, the threads, the metrics and the gRPC API's TLS, from the
//! flags and from TF Serving's files they name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use estimator::DeviceSpec;

use crate::batching::Batching;
use crate::limits::{
    default_max_connections, Limits, DEFAULT_BODY_LIMIT, DEFAULT_MAX_INSTANCES_IN_FLIGHT,
    DEFAULT_MAX_INSTANCES_PER_REQUEST, DEFAULT_TIMEOUT,
};
use crate::loaders::LoadRetries;
use crate::model_config::ModelConfig;
use crate::model_config_file::ModelConfigFile;
use crate::monitoring_config::MonitoringConfig;
use crate::prediction_threads::PredictionThreads;
use crate::ssl_config::SslConfig;

/// Serve exported models over TF Serving's REST API, and its gRPC API with --grpc-port.
/// TF Serving's spelling of the flags (--model_name=iris, --enable_batching=true) is read
/// as this program's.
///
/// Example:
///   dnn-classifier export --model-dir model_dir/iris --export-dir-base model_dir/iris/export
///   estimator-serve --model-name iris --model-base-path model_dir/iris/export
///   curl -d '{"instances": [{"sepal_length_cm": 5.1, "sepal_width_cm": 3.5,
///     "petal_length_cm": 1.4, "petal_width_cm": 0.2}]}' localhost:8501/v1/models/iris:predict
#[derive(Debug, Parser)]
#[command(name = "estimator-serve", version, verbatim_doc_comment)]
#[command(group(clap::ArgGroup::new("grpc_api").args(["grpc_port", "grpc_socket_path"]).multiple(true)))]
pub(crate) struct Cli {
    /// The model's name in the URLs (/v1/models/NAME).
    #[arg(long, value_name = "NAME")]
    pub(crate) model_name: Option<String>,
    /// Directory of the model's numbered export directories (directly, or one level down:
    /// export/latest/…, export/best/…, whose directory names become version labels).
    #[arg(long, value_name = "DIR")]
    pub(crate) model_base_path: Option<PathBuf>,
    /// Several models: TF Serving's model config file, in its protobuf text format
    /// (model_config_list { config { name: 'iris' base_path: '/models/iris' } }) or in JSON
    /// ({"model_config_list": {"config": [{"name": "iris", "base_path": "…"}]}}), each with
    /// an optional model_version_policy (latest { num_versions: N }, all {} or specific {
    /// versions: N }; default: the latest one) and version_labels.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["model_name", "model_base_path"])]
    pub(crate) model_config_file: Option<PathBuf>,
    /// Seconds between reads of --model-config-file, whose changes (models added, removed,
    /// their policies and labels) are then served (0: read once, at start).
    #[arg(long, value_name = "SECONDS", requires = "model_config_file")]
    pub(crate) model_config_file_poll_wait_seconds: Option<u64>,
    /// Port of the REST API.
    #[arg(long, default_value_t = 8501)]
    pub(crate) port: u16,
    /// Port of the REST API, by TF Serving's name for it. TF Serving's --port (its gRPC
    /// port) cannot be given beside it: here that is --grpc-port.
    #[arg(long, value_name = "PORT", conflicts_with = "port")]
    pub(crate) rest_api_port: Option<u16>,
    /// Port of TF Serving's gRPC API (PredictionService, ModelService; TF Serving's 8500),
    /// on --host; none by default.
    #[arg(long, value_name = "PORT")]
    pub(crate) grpc_port: Option<u16>,
    /// A Unix-domain socket the gRPC API also listens on (TF Serving's --grpc_socket_path),
    /// for clients on this machine; a socket left at the path is replaced.
    #[arg(long, value_name = "PATH")]
    pub(crate) grpc_socket_path: Option<PathBuf>,
    /// gRPC server arguments, comma-separated key=value (TF Serving's
    /// --grpc_channel_arguments): grpc.max_receive_message_length, max_send_message_length,
    /// keepalive_time_ms, keepalive_timeout_ms, max_connection_age_ms,
    /// max_connection_age_grace_ms and max_concurrent_streams are read, others ignored.
    #[arg(long, value_name = "LIST", default_value = "")]
    pub(crate) grpc_channel_arguments: String,
    /// With the gRPC API: TF Serving's SSL config file (server_key: "…" server_cert: "…"
    /// custom_ca: "…" client_verify: true, PEM texts inline): its connections over TLS.
    #[arg(long, value_name = "FILE", requires = "grpc_api")]
    pub(crate) ssl_config_file: Option<PathBuf>,
    /// Address to listen on; 0.0.0.0 to accept other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) host: String,
    /// Seconds between looks for new versions (0: never).
    #[arg(long, default_value_t = 1)]
    pub(crate) file_system_poll_wait_seconds: u64,
    /// Loads after the first of a version whose load failed (on the device, or reading its
    /// variables) while its files stay as they were; any change to them loads it again.
    #[arg(long, value_name = "N", default_value_t = LoadRetries::default().max)]
    pub(crate) max_num_load_retries: u32,
    /// Microseconds between two such loads.
    #[arg(long, value_name = "MICROS", default_value_t = LoadRetries::default().interval.as_micros() as u64)]
    pub(crate) load_retry_interval_micros: u64,
    /// Compute device: cpu, cuda (CUDA device 0), cuda:N, or auto (CUDA when this build
    /// has it and a driver is installed, else the CPU).
    #[arg(long, value_name = "DEVICE", default_value = "cpu", value_parser = parse_device)]
    pub(crate) device: DeviceSpec,
    /// Merge concurrent requests to a model into one prediction (TF Serving's
    /// --enable_batching).
    #[arg(long)]
    pub(crate) enable_batching: bool,
    /// With --enable-batching: TF Serving's batching parameters file (max_batch_size {
    /// value: 128 } batch_timeout_micros { value: 0 } num_batch_threads { value: 4 }
    /// max_enqueued_batches { value: 100 }), instead of --max-batch-size and
    /// --batch-timeout-micros.
    #[arg(
        long,
        value_name = "FILE",
        requires = "enable_batching",
        conflicts_with_all = ["max_batch_size", "batch_timeout_micros"]
    )]
    pub(crate) batching_parameters_file: Option<PathBuf>,
    /// With --enable-batching: most instances in one merged prediction.
    #[arg(long, default_value_t = 32, requires = "enable_batching")]
    pub(crate) max_batch_size: usize,
    /// With --enable-batching: each version batches as its own batching_params.pbtxt says,
    /// one without it not at all (TF Serving's --enable_per_model_batching_parameters).
    #[arg(long)]
    pub(crate) enable_per_model_batching_parameters: bool,
    /// With --enable-batching: longest a request waits for others, in microseconds (0: a
    /// batch is whatever queued while the model was busy).
    #[arg(long, default_value_t = 0, requires = "enable_batching")]
    pub(crate) batch_timeout_micros: u64,
    /// Answer the requests of a version's assets.extra/tf_serving_warmup_requests before it
    /// serves (TF Serving's --enable_model_warmup); a request not answered refuses the
    /// version.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) enable_model_warmup: bool,
    /// Times each warmup request is answered (TF Serving's
    /// --num_request_iterations_for_warmup; 0 is once).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) num_request_iterations_for_warmup: usize,
    /// Refuse Classify and Regress on a signature of the other method (TF Serving's
    /// --enable_signature_method_name_check, off by default there too).
    #[arg(long)]
    pub(crate) enable_signature_method_name_check: bool,
    /// Largest request body in bytes (413 beyond).
    #[arg(long, default_value_t = DEFAULT_BODY_LIMIT)]
    pub(crate) max_body_bytes: usize,
    /// Most instances (rows, columnar values or examples) in one request (413 beyond).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTANCES_PER_REQUEST)]
    pub(crate) max_instances_per_request: usize,
    /// The decoding budget: most instances decoded or being predicted at once, over all
    /// requests; a request waits until its instances fit. At least
    /// --max-instances-per-request.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTANCES_IN_FLIGHT)]
    pub(crate) max_instances_in_flight: usize,
    /// Most open connections; past it the connection idle longest is closed to make room,
    /// and with none idle the new one is answered 503. Default: the descriptor limit
    /// (ulimit -n) less 64, at most 4096.
    #[arg(long, value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// TF Serving's one REST timeout, in milliseconds: sets the three below at once.
    #[arg(
        long,
        value_name = "MS",
        conflicts_with_all = ["header_read_timeout_ms", "idle_timeout_ms", "body_read_timeout_ms"]
    )]
    pub(crate) rest_api_timeout_in_ms: Option<u64>,
    /// TF Serving's monitoring config file (prometheus_config { enable: true path:
    /// "/monitoring/prometheus/metrics" }): the metrics are served only where it says.
    /// Without it, they are at /monitoring/prometheus/metrics.
    #[arg(long, value_name = "FILE")]
    pub(crate) monitoring_config_file: Option<PathBuf>,
    /// Longest a request head may take from its first byte, in milliseconds (0: no limit).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    pub(crate) header_read_timeout_ms: u64,
    /// Longest a connection may stay open with no request under way, in milliseconds (0:
    /// no limit).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    pub(crate) idle_timeout_ms: u64,
    /// Longest a request body may take to arrive once its head has, in milliseconds (0: no
    /// limit); past it the request is answered 408 and its connection closed.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    pub(crate) body_read_timeout_ms: u64,
    /// Threads the CPU operations of every prediction share (TF Serving's
    /// --tensorflow_intra_op_parallelism; 0: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) tensorflow_intra_op_parallelism: usize,
    /// Predictions of one version at once, each on a model copy of its own (TF Serving's
    /// --tensorflow_inter_op_parallelism; 0: one per core, up to 4).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) tensorflow_inter_op_parallelism: usize,
    /// Both of the above, where neither is given (TF Serving's
    /// --tensorflow_session_parallelism).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) tensorflow_session_parallelism: usize,
    /// Threads that serve the connections of both APIs (TF Serving's --rest_api_num_threads;
    /// 0: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) rest_api_num_threads: usize,
    /// Let web pages of any origin read the REST API's answers (TF Serving's
    /// --rest_api_enable_cors_support).
    #[arg(long)]
    pub(crate) rest_api_enable_cors_support: bool,
    /// Serve gRPC's standard health service (grpc.health.v1.Health) beside the gRPC API
    /// (TF Serving's --enable_grpc_healthcheck_service).
    #[arg(long)]
    pub(crate) enable_grpc_healthcheck_service: bool,
    /// gRPC Predict answers carry float and integer outputs packed in `tensor_content`
    /// instead of the repeated fields (TF Serving's --enable_serialization_as_tensor_content).
    #[arg(long)]
    pub(crate) enable_serialization_as_tensor_content: bool,
}

/// A `--device` value: `cpu`, `cuda` (device 0), `cuda:N` or `auto`.
fn parse_device(text: &str) -> Result<DeviceSpec, String> {
    match text {
        "cpu" => Ok(DeviceSpec::Cpu),
        "cuda" => Ok(DeviceSpec::Cuda(0)),
        "auto" => Ok(DeviceSpec::Auto),
        other => match other.strip_prefix("cuda:").map(str::parse) {
            Some(Ok(index)) => Ok(DeviceSpec::Cuda(index)),
            _ => Err(format!("'{other}': expected cpu, cuda, cuda:N or auto")),
        },
    }
}

impl Cli {
    /// The models to serve, and the model config file's text when they come from one.
    pub(crate) fn models(&self) -> Result<(Vec<ModelConfig>, Option<String>)> {
        if let Some(path) = &self.model_config_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let models = ModelConfigFile::parse(&text)
                .with_context(|| path.display().to_string())?
                .models();
            if models.is_empty() {
                bail!("{}: lists no model to serve", path.display());
            }
            return Ok((models, Some(text)));
        }
        if self.model_config_file_poll_wait_seconds.is_some() {
            // clap drops the `requires` when --model-name, which conflicts with the file, is given.
            bail!("--model-config-file-poll-wait-seconds needs --model-config-file to read again");
        }
        match (&self.model_name, &self.model_base_path) {
            (Some(name), Some(base_path)) => Ok((
                vec![ModelConfig::new(name.clone(), base_path.clone())],
                None,
            )),
            _ => bail!("give --model-name and --model-base-path, or --model-config-file"),
        }
    }

    /// The limits the flags give; a budget below one request's cap, or a zero cap, is refused.
    pub(crate) fn limits(&self) -> Result<Limits> {
        if self.max_instances_per_request == 0 {
            bail!("--max-instances-per-request must be at least 1");
        }
        if self.max_instances_in_flight < self.max_instances_per_request {
            bail!(
            "--max-instances-in-flight ({}) must be at least --max-instances-per-request ({}): \
             a request of the largest size must fit",
            self.max_instances_in_flight,
            self.max_instances_per_request
        );
        }
        if self.max_connections == Some(0) {
            bail!("--max-connections must be at least 1");
        }
        let timeout = |ms: u64| {
            let ms = self.rest_api_timeout_in_ms.unwrap_or(ms);
            (ms > 0).then(|| Duration::from_millis(ms))
        };
        Ok(Limits {
            max_body_bytes: self.max_body_bytes,
            max_instances_per_request: self.max_instances_per_request,
            max_instances_in_flight: self.max_instances_in_flight,
            max_connections: self.max_connections.unwrap_or_else(default_max_connections),
            header_read_timeout: timeout(self.header_read_timeout_ms),
            idle_timeout: timeout(self.idle_timeout_ms),
            body_read_timeout: timeout(self.body_read_timeout_ms),
        })
    }

    /// The batching the flags (or the batching parameters file) set, with
    /// --enable-batching.
    pub(crate) fn batching(&self) -> Result<Option<Batching>> {
        if !self.enable_batching {
            return Ok(None);
        }
        if self.max_batch_size == 0 {
            bail!("--max-batch-size must be at least 1");
        }
        Ok(Some(match &self.batching_parameters_file {
            Some(path) => read(path, Batching::from_text_proto)?,
            None => Batching {
                max_batch_size: self.max_batch_size,
                batch_timeout: Duration::from_micros(self.batch_timeout_micros),
                ..Batching::default()
            },
        }))
    }

    /// The threads predictions take: intra- and inter-op parallelism as given, or the
    /// session parallelism for both where neither is (as TF Serving reads the three).
    pub(crate) fn prediction_threads(&self) -> Result<PredictionThreads> {
        let (intra, inter) = match (
            self.tensorflow_intra_op_parallelism,
            self.tensorflow_inter_op_parallelism,
        ) {
            (0, 0) => (
                self.tensorflow_session_parallelism,
                self.tensorflow_session_parallelism,
            ),
            given => given,
        };
        // Each concurrent prediction holds a copy of every version: bounded as the threads
        // are, so that a typo does not load thousands of copies.
        let most = estimator::device::max_intra_op_threads();
        if intra > most {
            bail!("--tensorflow-intra-op-parallelism {intra}: more than {most} (8 per core)");
        }
        if inter > most {
            bail!("--tensorflow-inter-op-parallelism {inter}: more than {most} (8 per core)");
        }
        PredictionThreads::new(intra, inter)
    }

    /// The threads that serve the connections, `None` for one per core; bounded as the
    /// prediction threads are.
    pub(crate) fn connection_threads(&self) -> Result<Option<usize>> {
        let (threads, most) = (
            self.rest_api_num_threads,
            estimator::device::max_intra_op_threads(),
        );
        if threads > most {
            bail!("--rest-api-num-threads {threads}: more than {most} (8 per core)");
        }
        Ok((threads > 0).then_some(threads))
    }

    /// How failed loads are retried.
    pub(crate) fn load_retries(&self) -> LoadRetries {
        LoadRetries {
            max: self.max_num_load_retries,
            interval: Duration::from_micros(self.load_retry_interval_micros),
        }
    }

    /// Where the metrics are served.
    pub(crate) fn monitoring(&self) -> Result<MonitoringConfig> {
        match &self.monitoring_config_file {
            Some(path) => read(path, MonitoringConfig::from_text_proto),
            None => Ok(MonitoringConfig::default()),
        }
    }

    /// The gRPC API's TLS, when an SSL config file is given.
    pub(crate) fn ssl(&self) -> Result<Option<SslConfig>> {
        self.ssl_config_file
            .as_deref()
            .map(|path| read(path, SslConfig::from_text_proto))
            .transpose()
    }
}

/// The file at `path` parsed by `parse`; an error names the file.
fn read<T>(path: &Path, parse: impl FnOnce(&str) -> Result<T>) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| path.display().to_string())
}

#[cfg(test)]
mod tests;
