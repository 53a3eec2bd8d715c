//! [`SslConfig`]: TF Serving's `--ssl_config_file`, TLS on the gRPC API.

use anyhow::{anyhow, bail};
use prost_reflect::Value;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::text_proto;

/// The gRPC API's TLS: the server's certificate and key, and the CA client certificates are
/// checked against (required of every client when `client_verify`).
#[derive(Clone, PartialEq, Eq)]
pub struct SslConfig {
    /// The server's private key, PEM.
    pub server_key: String,
    /// The server's certificate (chain), PEM.
    pub server_cert: String,
    /// The CA client certificates are checked against, PEM.
    pub custom_ca: Option<String>,
    /// Whether a client must present a certificate `custom_ca` issued.
    pub client_verify: bool,
}

impl std::fmt::Debug for SslConfig {
    /// Everything but the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SslConfig")
            .field("server_cert", &self.server_cert)
            .field("custom_ca", &self.custom_ca)
            .field("client_verify", &self.client_verify)
            .finish_non_exhaustive()
    }
}

impl SslConfig {
    /// An SSL config file as TF Serving's are written (`server_key: "-----BEGIN PRIVATE
    /// KEY-----\n…"`, `server_cert: "…"`, `custom_ca: "…"`, `client_verify: true`; the PEM
    /// texts inline, newlines escaped). A key and a certificate are required, and
    /// `client_verify` needs `custom_ca`.
    pub fn from_text_proto(text: &str) -> anyhow::Result<Self> {
        let message = text_proto::parse("tensorflow.serving.SSLConfig", text, &[])?;
        let text_of = |name: &str| match message.get_field_by_name(name).as_deref() {
            Some(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        };
        let (Some(server_key), Some(server_cert)) = (text_of("server_key"), text_of("server_cert"))
        else {
            bail!("server_key and server_cert are required: the gRPC API's TLS needs both");
        };
        let custom_ca = text_of("custom_ca");
        let client_verify = message
            .get_field_by_name("client_verify")
            .as_deref()
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let key = PrivateKeyDer::from_pem_slice(server_key.as_bytes())
            .map_err(|e| anyhow!("server_key: not a PEM private key ({e})"))?;
        rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| anyhow!("server_key: {e}"))?;
        certificates("server_cert", &server_cert)?;
        if let Some(ca) = &custom_ca {
            certificates("custom_ca", ca)?;
        }
        if client_verify && custom_ca.is_none() {
            bail!("client_verify: true needs custom_ca, the CA client certificates are checked against");
        }
        Ok(Self {
            server_key,
            server_cert,
            custom_ca,
            client_verify,
        })
    }
}

/// The certificates of the PEM text in field `field`: at least one, each well formed.
fn certificates(field: &str, pem: &str) -> anyhow::Result<()> {
    let certificates = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{field}: not PEM certificates ({e})"))?;
    if certificates.is_empty() {
        bail!("{field}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tf_serving_s_ssl_config_and_refuses_what_cannot_serve() {
        let tasks = [("server".to_string(), vec!["localhost".to_string()])];
        let (ca, issued) = estimator::cluster::issue_certificates("ca", &tasks).unwrap();
        let escaped = |pem: &str| pem.replace('\n', "\\n");
        let (key, cert) = (escaped(&issued[0].key_pem), escaped(&issued[0].cert_pem));
        // Adjacent strings join, as TF Serving's files may split a PEM text over lines.
        let (head, tail) = cert.split_at(cert.len() / 2);
        let text = format!(
            "server_key: \"{key}\"\nserver_cert: \"{head}\"\n  \"{tail}\"\n\
             custom_ca: \"{}\"\nclient_verify: true\n",
            escaped(&ca)
        );
        let config = SslConfig::from_text_proto(&text).unwrap();
        assert_eq!(config.server_cert, issued[0].cert_pem);
        assert_eq!(
            (config.custom_ca.as_deref(), config.client_verify),
            (Some(&*ca), true)
        );
        assert!(!format!("{config:?}").contains("PRIVATE KEY"));

        let error = |text: &str| SslConfig::from_text_proto(text).unwrap_err().to_string();
        assert!(error(&format!("server_key: \"{key}\"")).contains("server_cert are required"));
        let unverified =
            format!("server_key: \"{key}\" server_cert: \"{cert}\" client_verify: true");
        assert!(error(&unverified).contains("needs custom_ca"));
        let bad_key =
            "server_key: \"-----BEGIN PRIVATE KEY-----\\nbm9wZQ==\\n-----END PRIVATE KEY-----\\n\"";
        let message = error(&format!("{bad_key} server_cert: \"{cert}\""));
        assert!(message.starts_with("server_key: "), "{message}");
        let message = error(&format!("server_key: \"{key}\" server_cert: \"junk\""));
        assert!(
            message.starts_with("server_cert: holds no PEM certificate"),
            "{message}"
        );
    }
}
