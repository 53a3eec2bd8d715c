//! The `estimator-serve` program as a function: its flags, runtime, limits, timeouts and
//! shutdown, for any set of estimators. `estimator-serve` is [`serve_with`] of the canned
//! estimators; a user's serving binary is [`serve`] of its estimator.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser};
use estimator::export::ServableEstimator;
use estimator::DeviceSpec;

use crate::batching::Batching;
use crate::config_watch::watch_model_config;
use crate::flag_spelling::respelled;
use crate::limits::{
    default_max_connections, Limits, DEFAULT_BODY_LIMIT, DEFAULT_MAX_INSTANCES_IN_FLIGHT,
    DEFAULT_MAX_INSTANCES_PER_REQUEST, DEFAULT_TIMEOUT,
};
use crate::loaders::{LoadRetries, Loaders};
use crate::model_config::ModelConfig;
use crate::model_config_file::ModelConfigFile;
use crate::monitoring_config::MonitoringConfig;
use crate::server::Server;

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
struct Cli {
    /// The model's name in the URLs (/v1/models/NAME).
    #[arg(long, value_name = "NAME")]
    model_name: Option<String>,
    /// Directory of the model's numbered export directories (directly, or one level down:
    /// export/latest/…, export/best/…, whose directory names become version labels).
    #[arg(long, value_name = "DIR")]
    model_base_path: Option<PathBuf>,
    /// Several models: TF Serving's model config file, in its protobuf text format
    /// (model_config_list { config { name: 'iris' base_path: '/models/iris' } }) or in JSON
    /// ({"model_config_list": {"config": [{"name": "iris", "base_path": "…"}]}}), each with
    /// an optional model_version_policy (latest { num_versions: N }, all {} or specific {
    /// versions: N }; default: the latest one) and version_labels.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["model_name", "model_base_path"])]
    model_config_file: Option<PathBuf>,
    /// Seconds between reads of --model-config-file, whose changes (models added, removed,
    /// their policies and labels) are then served (0: read once, at start).
    #[arg(long, value_name = "SECONDS", requires = "model_config_file")]
    model_config_file_poll_wait_seconds: Option<u64>,
    /// Port of the REST API.
    #[arg(long, default_value_t = 8501)]
    port: u16,
    /// Port of the REST API, by TF Serving's name for it. TF Serving's --port (its gRPC
    /// port) cannot be given beside it: here that is --grpc-port.
    #[arg(long, value_name = "PORT", conflicts_with = "port")]
    rest_api_port: Option<u16>,
    /// Port of TF Serving's gRPC API (PredictionService, ModelService; TF Serving's 8500),
    /// on --host; none by default.
    #[arg(long, value_name = "PORT")]
    grpc_port: Option<u16>,
    /// Address to listen on; 0.0.0.0 to accept other machines.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Seconds between looks for new versions (0: never).
    #[arg(long, default_value_t = 1)]
    file_system_poll_wait_seconds: u64,
    /// Loads after the first of a version whose load failed (on the device, or reading its
    /// variables) while its files stay as they were; any change to them loads it again.
    #[arg(long, value_name = "N", default_value_t = LoadRetries::default().max)]
    max_num_load_retries: u32,
    /// Microseconds between two such loads.
    #[arg(long, value_name = "MICROS", default_value_t = LoadRetries::default().interval.as_micros() as u64)]
    load_retry_interval_micros: u64,
    /// Compute device: cpu, cuda (CUDA device 0), cuda:N, or auto (CUDA when this build
    /// has it and a driver is installed, else the CPU).
    #[arg(long, value_name = "DEVICE", default_value = "cpu", value_parser = parse_device)]
    device: DeviceSpec,
    /// Merge concurrent requests to a model into one prediction (TF Serving's
    /// --enable_batching).
    #[arg(long)]
    enable_batching: bool,
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
    batching_parameters_file: Option<PathBuf>,
    /// With --enable-batching: most instances in one merged prediction.
    #[arg(long, default_value_t = 32, requires = "enable_batching")]
    max_batch_size: usize,
    /// With --enable-batching: longest a request waits for others, in microseconds (0: a
    /// batch is whatever queued while the model was busy).
    #[arg(long, default_value_t = 0, requires = "enable_batching")]
    batch_timeout_micros: u64,
    /// Largest request body in bytes (413 beyond).
    #[arg(long, default_value_t = DEFAULT_BODY_LIMIT)]
    max_body_bytes: usize,
    /// Most instances (rows, columnar values or examples) in one request (413 beyond).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTANCES_PER_REQUEST)]
    max_instances_per_request: usize,
    /// The decoding budget: most instances decoded or being predicted at once, over all
    /// requests; a request waits until its instances fit. At least
    /// --max-instances-per-request.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSTANCES_IN_FLIGHT)]
    max_instances_in_flight: usize,
    /// Most open connections; past it the connection idle longest is closed to make room,
    /// and with none idle the new one is answered 503. Default: the descriptor limit
    /// (ulimit -n) less 64, at most 4096.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// TF Serving's one REST timeout, in milliseconds: sets the three below at once.
    #[arg(
        long,
        value_name = "MS",
        conflicts_with_all = ["header_read_timeout_ms", "idle_timeout_ms", "body_read_timeout_ms"]
    )]
    rest_api_timeout_in_ms: Option<u64>,
    /// TF Serving's monitoring config file (prometheus_config { enable: true path:
    /// "/monitoring/prometheus/metrics" }): the metrics are served only where it says.
    /// Without it, they are at /monitoring/prometheus/metrics.
    #[arg(long, value_name = "FILE")]
    monitoring_config_file: Option<PathBuf>,
    /// Longest a request head may take from its first byte, in milliseconds (0: no limit).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    header_read_timeout_ms: u64,
    /// Longest a connection may stay open with no request under way, in milliseconds (0:
    /// no limit).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    idle_timeout_ms: u64,
    /// Longest a request body may take to arrive once its head has, in milliseconds (0: no
    /// limit); past it the request is answered 408 and its connection closed.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT.as_millis() as u64)]
    body_read_timeout_ms: u64,
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

/// The models to serve, and the model config file's text when they come from one.
fn models(cli: &Cli) -> Result<(Vec<ModelConfig>, Option<String>)> {
    if let Some(path) = &cli.model_config_file {
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
    if cli.model_config_file_poll_wait_seconds.is_some() {
        // clap drops the `requires` when --model-name, which conflicts with the file, is given.
        bail!("--model-config-file-poll-wait-seconds needs --model-config-file to read again");
    }
    match (&cli.model_name, &cli.model_base_path) {
        (Some(name), Some(base_path)) => Ok((
            vec![ModelConfig::new(name.clone(), base_path.clone())],
            None,
        )),
        _ => bail!("give --model-name and --model-base-path, or --model-config-file"),
    }
}

/// The limits the flags give; a budget below one request's cap, or a zero cap, is refused.
fn limits(cli: &Cli) -> Result<Limits> {
    if cli.max_instances_per_request == 0 {
        bail!("--max-instances-per-request must be at least 1");
    }
    if cli.max_instances_in_flight < cli.max_instances_per_request {
        bail!(
            "--max-instances-in-flight ({}) must be at least --max-instances-per-request ({}): \
             a request of the largest size must fit",
            cli.max_instances_in_flight,
            cli.max_instances_per_request
        );
    }
    if cli.max_connections == Some(0) {
        bail!("--max-connections must be at least 1");
    }
    let timeout = |ms: u64| {
        let ms = cli.rest_api_timeout_in_ms.unwrap_or(ms);
        (ms > 0).then(|| Duration::from_millis(ms))
    };
    Ok(Limits {
        max_body_bytes: cli.max_body_bytes,
        max_instances_per_request: cli.max_instances_per_request,
        max_instances_in_flight: cli.max_instances_in_flight,
        max_connections: cli.max_connections.unwrap_or_else(default_max_connections),
        header_read_timeout: timeout(cli.header_read_timeout_ms),
        idle_timeout: timeout(cli.idle_timeout_ms),
        body_read_timeout: timeout(cli.body_read_timeout_ms),
    })
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminate = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
    tracing::info!("shutting down: finishing the requests under way");
}

fn run(cli: Cli, loaders: Loaders) -> Result<()> {
    let mut loaders = loaders.on(cli.device).with_load_retries(LoadRetries {
        max: cli.max_num_load_retries,
        interval: Duration::from_micros(cli.load_retry_interval_micros),
    });
    if cli.enable_batching {
        if cli.max_batch_size == 0 {
            bail!("--max-batch-size must be at least 1");
        }
        let batching = match &cli.batching_parameters_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                Batching::from_text_proto(&text).with_context(|| path.display().to_string())?
            }
            None => Batching {
                max_batch_size: cli.max_batch_size,
                batch_timeout: Duration::from_micros(cli.batch_timeout_micros),
                ..Batching::default()
            },
        };
        loaders = loaders.with_batching(batching);
    }
    let limits = limits(&cli)?;
    let (models, config_text) = models(&cli)?;
    let monitoring = match &cli.monitoring_config_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            MonitoringConfig::from_text_proto(&text).with_context(|| path.display().to_string())?
        }
        None => MonitoringConfig::default(),
    };
    let server = Server::load(models, loaders)?
        .with_limits(limits)
        .with_monitoring(monitoring);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        // One signal stops both APIs: each finishes the requests under way.
        let (stop, stopping) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        });
        let stopped = move || {
            let mut stopping = stopping.clone();
            async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            }
        };
        let grpc = match cli.grpc_port {
            Some(port) => {
                let address = format!("{}:{port}", cli.host);
                let listener = tokio::net::TcpListener::bind(&address)
                    .await
                    .with_context(|| format!("cannot listen on {address}"))?;
                tracing::info!("serving the gRPC API on {}", listener.local_addr()?);
                Some(tokio::spawn(server.clone().run_grpc(listener, stopped())))
            }
            None => None,
        };
        let address = format!("{}:{}", cli.host, cli.rest_api_port.unwrap_or(cli.port));
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .with_context(|| format!("cannot listen on {address}"))?;
        tracing::info!(
            "serving the REST API on http://{} (at most {} connections)",
            listener.local_addr()?,
            limits.max_connections
        );
        if let (Some(path), Some(text), Some(seconds @ 1..)) = (
            &cli.model_config_file,
            config_text,
            cli.model_config_file_poll_wait_seconds,
        ) {
            let every = Duration::from_secs(seconds);
            tokio::spawn(watch_model_config(
                server.clone(),
                path.clone(),
                text,
                every,
            ));
        }
        let poll = Duration::from_secs(cli.file_system_poll_wait_seconds);
        server.run(listener, poll, stopped()).await?;
        if let Some(grpc) = grpc {
            grpc.await?.context("the gRPC API failed")?;
        }
        Ok(())
    })
}

/// Runs a whole TF-Serving-compatible server for exports of `E` (and of every canned
/// estimator), with `estimator-serve`'s flags, limits, timeouts and shutdown; the exit code
/// of a program's `main`:
///
/// ```no_run
/// # use estimator_serve::ServableEstimator;
/// # fn user<MyEstimator: ServableEstimator>() -> std::process::ExitCode {
/// estimator_serve::serve::<MyEstimator>()
/// # }
/// ```
pub fn serve<E: ServableEstimator>() -> ExitCode {
    serve_with(Loaders::canned().with::<E>())
}

/// Runs `estimator-serve` for the estimators of `loaders` (their device and batching set by
/// the flags): parses the command line, serves until SIGINT or SIGTERM, then finishes the
/// requests under way. Errors are one line on stderr and a non-zero exit code.
pub fn serve_with(loaders: Loaders) -> ExitCode {
    estimator::main(|| {
        // Usage and errors name the binary that was run, not this crate.
        let program = std::env::args()
            .next()
            .and_then(|arg0| {
                std::path::Path::new(&arg0)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "estimator-serve".into());
        let args = respelled(std::env::args_os());
        let matches = Cli::command().bin_name(program).get_matches_from(args);
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        run(cli, loaders)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf_serving_s_rest_timeout_sets_the_three_timeouts_and_cannot_contradict_them() {
        let cli = |extra: &[&str]| {
            let model = [
                "estimator-serve",
                "--model-name",
                "m",
                "--model-base-path",
                "b",
            ];
            Cli::try_parse_from(model.iter().chain(extra))
        };
        let limits = limits_of(&["--rest-api-timeout-in-ms", "5000"]);
        let five = Some(Duration::from_secs(5));
        let timeouts = (
            limits.header_read_timeout,
            limits.idle_timeout,
            limits.body_read_timeout,
        );
        assert_eq!(timeouts, (five, five, five));
        let off = limits_of(&["--rest-api-timeout-in-ms", "0"]);
        assert_eq!(off.idle_timeout, None);
        assert!(cli(&["--rest-api-timeout-in-ms", "5000", "--idle-timeout-ms", "1"]).is_err());
    }

    fn limits_of(extra: &[&str]) -> Limits {
        let model = [
            "estimator-serve",
            "--model-name",
            "m",
            "--model-base-path",
            "b",
        ];
        limits(&Cli::try_parse_from(model.iter().chain(extra)).unwrap()).unwrap()
    }
}
