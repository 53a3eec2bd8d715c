//! The check of a client's certificate, with the certificate's subject and issuer in the
//! error: the log then says which task (`CN=worker:1`) was refused, not only its address.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, OtherError};
use rustls::{Error, SignatureScheme};
use rustls_pki_types::{CertificateDer, UnixTime};

/// rustls' WebPKI check of client certificates, naming the certificate it refuses.
#[derive(Debug)]
pub(super) struct NamingVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl NamingVerifier {
    pub(super) fn new(inner: Arc<dyn ClientCertVerifier>) -> Self {
        Self { inner }
    }
}

/// Why a presented certificate was refused, and whose it was.
#[derive(Debug, thiserror::Error)]
#[error("certificate {certificate}: {reason}")]
struct Refused {
    certificate: String,
    reason: CertificateError,
}

/// "subject \"CN=worker:1\" issued by \"CN=cluster CA\"", as far as the certificate parses.
pub(super) fn describe(certificate: &CertificateDer<'_>) -> String {
    match x509_parser::parse_x509_certificate(certificate) {
        Ok((_, parsed)) => format!(
            "subject \"{}\" issued by \"{}\"",
            parsed.subject(),
            parsed.issuer()
        ),
        Err(_) => "(not a parseable X.509 certificate)".to_string(),
    }
}

impl ClientCertVerifier for NamingVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        self.inner
            .verify_client_cert(end_entity, intermediates, now)
            .map_err(|error| match error {
                Error::InvalidCertificate(reason) => {
                    let refused = Refused {
                        certificate: describe(end_entity),
                        reason,
                    };
                    Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
                        refused,
                    ))))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
