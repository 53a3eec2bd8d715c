//! The `estimator-serve` program as a function: its runtime, its two APIs and their
//! shutdown, for any set of estimators (the flags are `cli.rs`). `estimator-serve` is
//! [`serve_with`] of the canned estimators; a user's serving binary is [`serve`] of its
//! estimator.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches};
use estimator::export::ServableEstimator;

use crate::cli::Cli;
use crate::config_watch::watch_model_config;
use crate::flag_spelling::respelled;
use crate::grpc_channel_arguments::GrpcChannelArguments;
use crate::ignored_flags::without_ignored;
use crate::loaders::Loaders;
use crate::server::Server;

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
    let mut loaders = loaders
        .on(cli.device)
        .with_load_retries(cli.load_retries())
        .with_model_warmup(cli.enable_model_warmup)
        .with_warmup_iterations(cli.num_request_iterations_for_warmup)
        .with_signature_method_name_check(cli.enable_signature_method_name_check)
        .with_prediction_threads(cli.prediction_threads()?)
        .with_per_model_batching(cli.enable_per_model_batching_parameters);
    if let Some(batching) = cli.batching()? {
        loaders = loaders.with_batching(batching);
    }
    let limits = cli.limits()?;
    let (models, config_text) = cli.models()?;
    let mut server = Server::load(models, loaders)?
        .with_limits(limits)
        .with_monitoring(cli.monitoring()?)
        .with_cors(cli.rest_api_enable_cors_support)
        .with_grpc_health_check(cli.enable_grpc_healthcheck_service)
        .with_serialization_as_tensor_content(cli.enable_serialization_as_tensor_content);
    let (arguments, ignored) = GrpcChannelArguments::parse(&cli.grpc_channel_arguments)?;
    for warning in ignored {
        tracing::warn!("{warning}");
    }
    server = server.with_grpc_channel_arguments(arguments);
    if let Some(ssl) = cli.ssl()? {
        server = server.with_grpc_tls(ssl);
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = cli.connection_threads()? {
        runtime.worker_threads(threads);
    }
    let runtime = runtime.enable_all().build()?;
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
        let tls = if server.grpc_tls.is_some() {
            " (TLS)"
        } else {
            ""
        };
        let mut grpc = tokio::task::JoinSet::new();
        if let Some(port) = cli.grpc_port {
            let address = format!("{}:{port}", cli.host);
            let listener = tokio::net::TcpListener::bind(&address)
                .await
                .with_context(|| format!("cannot listen on {address}"))?;
            tracing::info!("serving the gRPC API on {}{tls}", listener.local_addr()?);
            let served = server.clone().run_grpc(listener, stopped());
            grpc.spawn(async { served.await.context("the gRPC API failed") });
        }
        if let Some(path) = cli.grpc_socket_path.clone() {
            let served = unix_socket_api(server.clone(), path.clone(), stopped())?;
            tracing::info!("serving the gRPC API on the socket {}{tls}", path.display());
            grpc.spawn(served);
        }
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
        let rest = async {
            server
                .run(listener, poll, stopped())
                .await
                .map_err(anyhow::Error::from)
        };
        // Either API failing (a TLS config that does not load) stops the program.
        let grpc = async {
            while let Some(served) = grpc.join_next().await {
                served.context("the gRPC API stopped")??;
            }
            Ok(())
        };
        tokio::try_join!(rest, grpc)?;
        Ok(())
    })
}

/// The gRPC API on a Unix-domain socket at `path` until `shutdown`, listening already.
#[cfg(unix)]
fn unix_socket_api(
    server: Server,
    path: std::path::PathBuf,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<impl std::future::Future<Output = Result<()>> + Send + 'static> {
    server.run_grpc_unix(path, shutdown)
}

#[cfg(not(unix))]
fn unix_socket_api(
    _: Server,
    path: std::path::PathBuf,
    _: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<std::future::Ready<Result<()>>> {
    anyhow::bail!(
        "--grpc-socket-path {}: no Unix-domain sockets here",
        path.display()
    )
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
        let (args, ignored) = without_ignored(respelled(std::env::args_os()));
        for warning in ignored {
            tracing::warn!("{warning}");
        }
        let matches = Cli::command().bin_name(program).get_matches_from(args);
        let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        run(cli, loaders)
    })
}
