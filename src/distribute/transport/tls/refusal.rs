//! Telling a TLS refusal from a peer that is not up yet: a certificate the other side does
//! not trust is a configuration error that no retry can fix.

use std::error::Error as StdError;

use rustls::{AlertDescription, Error};

/// Why the TLS handshake behind `error` (or one of its sources) failed, when it failed on
/// a certificate or on a peer that does not speak TLS; `None` for anything else.
pub(crate) fn tls_refusal(error: &(dyn StdError + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(error) = next {
        let tls = error.downcast_ref::<Error>().or_else(|| {
            error
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<Error>())
        });
        if let Some(reason) = tls.and_then(refusal).or_else(|| alert_text(error)) {
            return Some(reason);
        }
        next = error.source();
    }
    None
}

fn refusal(error: &Error) -> Option<String> {
    match error {
        Error::InvalidCertificate(_)
        | Error::NoCertificatesPresented
        | Error::InconsistentKeys(_)
        | Error::PeerIncompatible(_) => Some(format!("TLS: {error}")),
        Error::InvalidMessage(_) => Some(format!(
            "TLS: {error} (does the peer speak TLS? every task needs ESTIMATOR_TLS_*)"
        )),
        Error::AlertReceived(alert) if refused_us(*alert) => Some(format!(
            "TLS: the peer refused this task's certificate ({error})"
        )),
        _ => None,
    }
}

/// The alerts a peer sends when it does not accept this task's certificate.
const REFUSALS: [AlertDescription; 10] = [
    AlertDescription::BadCertificate,
    AlertDescription::UnsupportedCertificate,
    AlertDescription::CertificateRevoked,
    AlertDescription::CertificateExpired,
    AlertDescription::CertificateUnknown,
    AlertDescription::UnknownCA,
    AlertDescription::AccessDenied,
    AlertDescription::CertificateRequired,
    AlertDescription::HandshakeFailure,
    AlertDescription::DecryptError,
];

fn refused_us(alert: AlertDescription) -> bool {
    REFUSALS.contains(&alert)
}

/// An alert that reached the caller as text: an alert received after the handshake (TLS
/// 1.3 checks the client's certificate then) comes back from the HTTP/2 connection as an
/// I/O error whose payload is rustls' message, not the error itself.
fn alert_text(error: &(dyn StdError + 'static)) -> Option<String> {
    let io = error.downcast_ref::<std::io::Error>()?;
    if io.kind() != std::io::ErrorKind::InvalidData {
        return None;
    }
    let text = io.get_ref()?.to_string();
    let alert = text.strip_prefix("received fatal alert: ")?;
    REFUSALS
        .iter()
        .any(|refusal| format!("{refusal:?}") == alert)
        .then(|| format!("TLS: the peer refused this task's certificate ({text})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_failures_are_refusals_wherever_they_sit_in_the_chain() {
        let alert = Error::AlertReceived(AlertDescription::UnknownCA);
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, alert);
        let reason = tls_refusal(&wrapped).unwrap();
        assert!(
            reason.contains("refused this task's certificate"),
            "{reason}"
        );
        let missing = Error::NoCertificatesPresented;
        assert!(tls_refusal(&missing).is_some());
    }

    #[test]
    fn an_alert_passed_on_as_text_is_a_refusal() {
        let text = "received fatal alert: CertificateUnknown";
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, text);
        let reason = tls_refusal(&wrapped).unwrap();
        assert!(
            reason.contains("refused this task's certificate"),
            "{reason}"
        );
        let other = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "received fatal alert: CloseNotify",
        );
        assert_eq!(tls_refusal(&other), None);
    }

    #[test]
    fn other_failures_are_not() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(tls_refusal(&refused), None);
        assert_eq!(
            tls_refusal(&Error::AlertReceived(AlertDescription::CloseNotify)),
            None
        );
    }
}
