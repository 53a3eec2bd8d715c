//! Where a task finds its certificates for mutual TLS: three files, as a Kubernetes Secret
//! mounts them, named by environment variables.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::credential_variables::{TLS_CA, TLS_CERT, TLS_KEY, TLS_SERVER_NAME};
use crate::Error;

/// The files of mutual TLS between the tasks of a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// This task's certificate chain.
    pub cert: PathBuf,
    /// This task's private key.
    pub key: PathBuf,
    /// The cluster's CA certificate.
    pub ca: PathBuf,
    /// The name peers' certificates are checked against, when not their address's host.
    pub server_name: Option<String>,
}

/// The TLS files `$ESTIMATOR_TLS_CERT`, `$ESTIMATOR_TLS_KEY` and `$ESTIMATOR_TLS_CA` name,
/// and `$ESTIMATOR_TLS_SERVER_NAME`; `None` when none of the three is set.
pub fn tls_files_from_env() -> Result<Option<TlsFiles>, Error> {
    tls_files(|name| std::env::var_os(name))
}

fn tls_files(var: impl Fn(&str) -> Option<OsString>) -> Result<Option<TlsFiles>, Error> {
    let files = [TLS_CERT, TLS_KEY, TLS_CA].map(|name| (name, var(name)));
    let Some((set, _)) = files.iter().find(|(_, value)| value.is_some()) else {
        return Ok(None);
    };
    let mut paths = Vec::with_capacity(3);
    for (name, value) in &files {
        let value = value
            .clone()
            .ok_or(Error::TlsIncomplete { missing: name, set })?;
        if value.is_empty() {
            return Err(Error::TlsEmpty(name));
        }
        paths.push(PathBuf::from(value));
    }
    let server_name = match var(TLS_SERVER_NAME) {
        None => None,
        Some(name) if name.is_empty() => return Err(Error::TlsEmpty(TLS_SERVER_NAME)),
        Some(name) => Some(
            name.into_string()
                .map_err(|_| Error::TlsNotUtf8(TLS_SERVER_NAME))?,
        ),
    };
    let [cert, key, ca] = <[PathBuf; 3]>::try_from(paths).expect("three paths were pushed");
    Ok(Some(TlsFiles {
        cert,
        key,
        ca,
        server_name,
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Option<TlsFiles>, Error> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        tls_files(|name| vars.get(name).cloned())
    }

    #[test]
    fn none_set_is_plaintext_and_all_three_are_read() {
        assert!(from(&[]).unwrap().is_none());
        let files = from(&[
            (TLS_CERT, "/s/tls.crt"),
            (TLS_KEY, "/s/tls.key"),
            (TLS_CA, "/s/ca.crt"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(files.cert, PathBuf::from("/s/tls.crt"));
        assert_eq!(files.key, PathBuf::from("/s/tls.key"));
        assert_eq!(files.ca, PathBuf::from("/s/ca.crt"));
        assert_eq!(files.server_name, None);
    }

    #[test]
    fn a_missing_or_empty_variable_is_named() {
        let error = from(&[(TLS_CERT, "/s/tls.crt"), (TLS_CA, "/s/ca.crt")]).unwrap_err();
        assert!(matches!(
            error,
            Error::TlsIncomplete {
                missing: TLS_KEY,
                set: TLS_CERT
            }
        ));
        assert!(error
            .to_string()
            .starts_with("ESTIMATOR_TLS_KEY is not set"));
        let error = from(&[(TLS_CERT, "a"), (TLS_KEY, ""), (TLS_CA, "c")]).unwrap_err();
        assert!(matches!(error, Error::TlsEmpty(TLS_KEY)));
        let all = [
            (TLS_CERT, "a"),
            (TLS_KEY, "b"),
            (TLS_CA, "c"),
            (TLS_SERVER_NAME, ""),
        ];
        assert!(matches!(
            from(&all).unwrap_err(),
            Error::TlsEmpty(TLS_SERVER_NAME)
        ));
    }

    #[test]
    fn the_server_name_is_kept() {
        let all = [
            (TLS_CERT, "a"),
            (TLS_KEY, "b"),
            (TLS_CA, "c"),
            (TLS_SERVER_NAME, "estimator"),
        ];
        let files = from(&all).unwrap().unwrap();
        assert_eq!(files.server_name.as_deref(), Some("estimator"));
    }
}
