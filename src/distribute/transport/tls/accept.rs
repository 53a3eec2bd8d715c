//! The server side of the handshake: connections are accepted concurrently, and a refused
//! one is logged with the address it came from and why.

use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::Connected;

use super::ClusterTls;
use crate::distribute::transport::grpc::Admitted;

/// How long a connection may take to finish its handshake: a peer that opens a socket and
/// says nothing must not hold resources for ever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes waiting to be served.
const QUEUE: usize = 16;

/// A connection that completed the handshake.
pub(crate) type Accepted = std::io::Result<TlsStream<Admitted<TcpStream>>>;

impl ClusterTls {
    /// The connections of `incoming` that complete a mutual-TLS handshake; the others are
    /// logged and dropped. Spawns on the current tokio runtime; stops accepting (closing the
    /// listener) once the stream returned is dropped.
    pub(crate) fn accept(
        &self,
        incoming: impl Stream<Item = std::io::Result<Admitted<TcpStream>>> + Send + 'static,
    ) -> ReceiverStream<Accepted> {
        let (ready, accepted) = mpsc::channel::<Accepted>(QUEUE);
        let acceptor = self.acceptor.clone();
        tokio::spawn(async move {
            let mut incoming = std::pin::pin!(incoming);
            loop {
                let tcp = tokio::select! {
                    _ = ready.closed() => break,
                    next = incoming.next() => match next {
                        Some(Ok(tcp)) => tcp,
                        Some(Err(e)) => {
                            tracing::debug!("accepting a connection failed: {e}");
                            continue;
                        }
                        None => break,
                    },
                };
                let from = tcp
                    .connect_info()
                    .remote_addr()
                    .map_or_else(|| "an unknown address".to_string(), |a| a.to_string());
                let (acceptor, ready) = (acceptor.clone(), ready.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = ready.send(Ok(stream)).await;
                        }
                        Ok(Err(e)) => {
                            let why = why_refused(&e);
                            tracing::warn!("refused a TLS connection from {from}: {why}")
                        }
                        Err(_) => tracing::warn!(
                            "refused a TLS connection from {from}: no handshake within \
                             {HANDSHAKE_TIMEOUT:?}"
                        ),
                    }
                });
            }
        });
        ReceiverStream::new(accepted)
    }
}

/// A failed handshake in words: the refused certificate's own description (see
/// `verifier`), or rustls' message with a hint where the peer spoke no TLS at all.
fn why_refused(error: &std::io::Error) -> String {
    let tls = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other))) => {
            other.0.to_string()
        }
        Some(rustls::Error::InvalidMessage(_)) => {
            format!("{error} (it speaks no TLS: does that task have ESTIMATOR_TLS_* set?)")
        }
        Some(rustls::Error::NoCertificatesPresented) => {
            format!("{error} (that task has no certificate)")
        }
        _ => error.to_string(),
    }
}
