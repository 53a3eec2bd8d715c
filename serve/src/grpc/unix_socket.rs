//! The gRPC API on a Unix-domain socket (TF Serving's `--grpc_socket_path`), for clients on
//! this machine: a sidecar, a proxy in the same pod. TLS applies as on the TCP port.

use std::future::Future;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;

use crate::server::Server;

impl Server {
    /// Listens on a socket at `path` (in a Tokio runtime), and gives the gRPC API served
    /// there until `shutdown` completes, which then removes the socket. A socket left there
    /// by an earlier run is replaced, as gRPC replaces it; anything else at `path` is an
    /// error naming it.
    pub fn run_grpc_unix(
        self,
        path: PathBuf,
        shutdown: impl Future<Output = ()> + Send,
    ) -> anyhow::Result<impl Future<Output = anyhow::Result<()>>> {
        let listener = bind(&path)?;
        Ok(async move {
            let served = self
                .serve_grpc(UnixListenerStream::new(listener), shutdown)
                .await;
            let _ = std::fs::remove_file(&path);
            served.with_context(|| format!("the gRPC API on {}", path.display()))
        })
    }
}

/// A listener on a new socket at `path`, a stale socket there removed first.
fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("cannot replace the old socket {}", path.display()))?,
        Ok(_) => bail!(
            "--grpc-socket-path {}: a file that is not a socket is there",
            path.display()
        ),
        Err(_) => {}
    }
    UnixListener::bind(path)
        .with_context(|| format!("--grpc-socket-path {}: cannot listen", path.display()))
}
