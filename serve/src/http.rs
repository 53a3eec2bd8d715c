//! A [`Server`] over HTTP: its REST routes and the serving loop, with the watcher that
//! loads new versions.

use std::future::Future;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;

use crate::connection::Timeouts;
use crate::cors::{allow_any_origin, preflight};
use crate::routes::{call, call_on, metadata, metadata_of, prometheus, status, status_of};
use crate::server::Server;

impl Server {
    /// The REST routes.
    pub fn router(&self) -> Router {
        let router = Router::new()
            .route(
                "/v1/models/{model}",
                get(status).post(call).options(preflight),
            )
            .route(
                "/v1/models/{model}/metadata",
                get(metadata).options(preflight),
            )
            .route(
                "/v1/models/{model}/{kind}/{which}",
                get(status_of).post(call_on).options(preflight),
            )
            .route(
                "/v1/models/{model}/{kind}/{which}/metadata",
                get(metadata_of).options(preflight),
            )
            .layer(DefaultBodyLimit::max(self.limits.max_body_bytes));
        // The model URLs' answers only, as TF Serving's: not the metrics'.
        let router = match self.cors {
            true => router.layer(axum::middleware::map_response(allow_any_origin)),
            false => router,
        };
        let router = match &self.monitoring.prometheus_path {
            Some(path) => router.route(path, get(prometheus)),
            None => router,
        };
        router.with_state(self.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then finishes the requests under
    /// way; a rescan runs every `poll` (TF Serving's
    /// `--file_system_poll_wait_seconds`; zero: never). Connections are held to the
    /// limits' cap and timeouts.
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
        let timeouts = Timeouts {
            header_read: self.limits.header_read_timeout,
            idle: self.limits.idle_timeout,
            body_read: self.limits.body_read_timeout,
        };
        let served = crate::accept::serve(
            listener,
            self.router(),
            self.limits.max_connections,
            timeouts,
            shutdown,
        )
        .await;
        if let Some(watcher) = watcher {
            watcher.abort();
        }
        served
    }
}
