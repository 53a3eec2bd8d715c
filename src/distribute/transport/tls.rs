//! Mutual TLS between the tasks of a cluster: every task presents a certificate issued by
//! the cluster's CA and checks its peers' against it, on the collectives' and the ps
//! tasks' gRPC alike.
//!
//! The client side is tonic's (rustls on ring). The server side is ours ([`ClusterTls::accept`]):
//! tonic's own drops a failed handshake silently, where an operator needs to read who was
//! refused and why.

mod accept;
mod fault;
mod refusal;
mod verifier;

use std::path::Path;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::cluster::{tls_files_from_env, TlsFiles, TLS_CA, TLS_CERT, TLS_KEY};
use crate::error::{Error, Result};
pub use fault::TlsFault;
pub(crate) use refusal::tls_refusal;
use verifier::NamingVerifier;

/// A task's TLS identity and the CA it trusts, ready for the gRPC servers and clients.
pub struct ClusterTls {
    acceptor: TlsAcceptor,
    client: ClientTlsConfig,
    server_name: Option<String>,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl ClusterTls {
    /// The TLS the environment asks for (`ESTIMATOR_TLS_CERT`, `_KEY`, `_CA`, and the
    /// optional `_SERVER_NAME`), loaded; `None` when none of the files is named.
    pub fn from_env() -> Result<Option<Arc<Self>>> {
        match tls_files_from_env()? {
            Some(files) => Ok(Some(Arc::new(Self::load(&files)?))),
            None => Ok(None),
        }
    }

    /// Reads and checks `files`: the certificate chain, its key, and the CA.
    pub fn load(files: &TlsFiles) -> Result<Self> {
        let cert_pem = read(TLS_CERT, &files.cert)?;
        let key_pem = read(TLS_KEY, &files.key)?;
        let ca_pem = read(TLS_CA, &files.ca)?;
        let chain = certificates(TLS_CERT, &files.cert, &cert_pem)?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            Error::Tls(TlsFault::Pem {
                variable: TLS_KEY,
                path: files.key.clone(),
                message: format!("no private key: {e}"),
            })
        })?;
        let mut roots = RootCertStore::empty();
        for ca in certificates(TLS_CA, &files.ca, &ca_pem)? {
            roots.add(ca).map_err(|e| {
                Error::Tls(TlsFault::Pem {
                    variable: TLS_CA,
                    path: files.ca.clone(),
                    message: format!("not a CA certificate: {e}"),
                })
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|e| {
                    Error::Tls(TlsFault::Pem {
                        variable: TLS_CA,
                        path: files.ca.clone(),
                        message: e.to_string(),
                    })
                })?;
        let mut server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(TlsFault::Unusable(e.to_string())))?
            .with_client_cert_verifier(Arc::new(NamingVerifier::new(verifier)))
            .with_single_cert(chain, key)
            .map_err(|e| {
                Error::Tls(match e {
                    rustls::Error::InconsistentKeys(_) => TlsFault::KeyMismatch {
                        cert: files.cert.clone(),
                        key: files.key.clone(),
                    },
                    other => TlsFault::Unusable(other.to_string()),
                })
            })?;
        server.alpn_protocols = vec![b"h2".to_vec()];
        let client = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&ca_pem))
            .identity(Identity::from_pem(&cert_pem, &key_pem));
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            client,
            server_name: files.server_name.clone(),
        })
    }

    /// The client side, checking the peer's certificate against the cluster's CA and the
    /// server name (`ESTIMATOR_TLS_SERVER_NAME`, else the host of the peer's address).
    pub(crate) fn client_config(&self) -> ClientTlsConfig {
        match &self.server_name {
            Some(name) => self.client.clone().domain_name(name),
            None => self.client.clone(),
        }
    }
}

fn read(variable: &'static str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| {
        Error::Tls(TlsFault::Unreadable {
            variable,
            path: path.to_path_buf(),
            source,
        })
    })
}

/// Every certificate of a PEM file; none is an error.
fn certificates(
    variable: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>> {
    let invalid = |message: String| {
        Error::Tls(TlsFault::Pem {
            variable,
            path: path.to_path_buf(),
            message,
        })
    };
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("unreadable PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid("no CERTIFICATE in the file".into()));
    }
    Ok(chain)
}
