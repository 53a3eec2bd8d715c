//! A CA and one certificate per task, for mutual TLS in a cluster that has no PKI of its own
//! (`estimator-launch --tls`, `estimator-launch certs`, tests).

use std::io::Write;
use std::path::Path;

use atomic_file::AtomicFile;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::{Error, TlsFiles};

/// A certificate and its key, PEM.
#[derive(Debug, Clone)]
pub struct IssuedCertificate {
    /// The task it was issued to (`worker:1`), its subject's common name.
    pub task: String,
    /// The certificate.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
}

/// A new CA named `ca_name` and, for each `(task, hosts)`, a certificate whose common name
/// is the task and whose subject alternative names are the hosts (DNS names or IPs) its
/// peers dial; valid for client and server authentication alike. The CA's key is dropped:
/// nothing more can be issued in its name.
pub fn issue_certificates(
    ca_name: &str,
    tasks: &[(String, Vec<String>)],
) -> Result<(String, Vec<IssuedCertificate>), Error> {
    let failed = |task: &str, hosts: &[String], e: rcgen::Error| Error::CertificateIssue {
        task: task.to_string(),
        hosts: hosts.to_vec(),
        reason: e.to_string(),
    };
    let ca = {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, ca_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().map_err(|e| failed(ca_name, &[], e))?;
        CertifiedIssuer::self_signed(params, key).map_err(|e| failed(ca_name, &[], e))?
    };
    let mut issued = Vec::with_capacity(tasks.len());
    for (task, hosts) in tasks {
        let mut params =
            CertificateParams::new(hosts.clone()).map_err(|e| failed(task, hosts, e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, task.as_str());
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().map_err(|e| failed(task, hosts, e))?;
        let cert = params
            .signed_by(&key, &ca)
            .map_err(|e| failed(task, hosts, e))?;
        issued.push(IssuedCertificate {
            task: task.clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        });
    }
    Ok((ca.pem(), issued))
}

/// Writes `ca.crt` and, per task, `<task>.crt` and `<task>.key` (`worker-1.crt`: `:` is not
/// a portable file-name character) into `dir`, each atomically, keys readable by the owner
/// only; the files each task is to be given.
pub fn write_certificates(
    dir: &Path,
    ca_pem: &str,
    issued: &[IssuedCertificate],
) -> Result<Vec<TlsFiles>, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::CertificateWrite {
        path: dir.to_path_buf(),
        source: source.into(),
    })?;
    let ca = dir.join("ca.crt");
    write_atomically(&ca, ca_pem.as_bytes(), false)?;
    let mut files = Vec::with_capacity(issued.len());
    for certificate in issued {
        let stem = certificate.task.replace(':', "-");
        let cert = dir.join(format!("{stem}.crt"));
        let key = dir.join(format!("{stem}.key"));
        write_atomically(&cert, certificate.cert_pem.as_bytes(), false)?;
        write_atomically(&key, certificate.key_pem.as_bytes(), true)?;
        files.push(TlsFiles {
            cert,
            key,
            ca: ca.clone(),
            server_name: None,
        });
    }
    Ok(files)
}

fn write_atomically(path: &Path, bytes: &[u8], secret: bool) -> Result<(), Error> {
    // A key is the owner's alone from its first byte, whatever a file it replaces allowed.
    let file = if secret {
        AtomicFile::create_private(path)
    } else {
        AtomicFile::create(path)
    };
    file.and_then(|mut file| file.write_all(bytes).and_then(|()| file.commit()))
        .map_err(|source| Error::CertificateWrite {
            path: path.to_path_buf(),
            source: source.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_gets_a_certificate_and_a_private_key_file() {
        let tasks = vec![
            ("chief:0".to_string(), vec!["127.0.0.1".to_string()]),
            ("worker:0".to_string(), vec!["w0.ns.svc".to_string()]),
        ];
        let (ca, issued) = issue_certificates("test CA", &tasks).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = write_certificates(dir.path(), &ca, &issued).unwrap();
        assert_eq!(files[1].cert, dir.path().join("worker-0.crt"));
        assert_eq!(files[1].key, dir.path().join("worker-0.key"));
        for file in &files {
            let cert = std::fs::read_to_string(&file.cert).unwrap();
            assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"));
            let key = std::fs::read_to_string(&file.key).unwrap();
            assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&file.key).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
        }
        assert_ne!(issued[0].cert_pem, issued[1].cert_pem);
    }

    #[cfg(unix)]
    #[test]
    fn two_writers_at_once_leave_whole_files_and_owner_only_keys() {
        use std::os::unix::fs::PermissionsExt;
        let tasks = vec![("worker:0".to_string(), vec!["localhost".to_string()])];
        let versions = [
            issue_certificates("CA one", &tasks).unwrap(),
            issue_certificates("CA two", &tasks).unwrap(),
        ];
        let dir = tempfile::tempdir().unwrap();
        // A key left world-readable by hand: what replaces it must not inherit that.
        std::fs::write(dir.path().join("worker-0.key"), "stale").unwrap();
        let readable = std::fs::Permissions::from_mode(0o644);
        std::fs::set_permissions(dir.path().join("worker-0.key"), readable).unwrap();
        std::thread::scope(|scope| {
            for (ca, issued) in &versions {
                scope.spawn(|| {
                    for _ in 0..50 {
                        write_certificates(dir.path(), ca, issued).unwrap();
                    }
                });
            }
        });
        let key_path = dir.path().join("worker-0.key");
        let key = std::fs::read_to_string(&key_path).unwrap();
        assert!(versions.iter().any(|(_, issued)| issued[0].key_pem == key));
        let ca = std::fs::read_to_string(dir.path().join("ca.crt")).unwrap();
        assert!(versions.iter().any(|(version, _)| *version == ca));
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            3,
            "no temp file left"
        );
    }

    #[test]
    fn a_failed_write_leaves_no_temp_file_and_the_other_files_whole() {
        let tasks = vec![("worker:0".to_string(), vec!["localhost".to_string()])];
        let (ca, issued) = issue_certificates("test CA", &tasks).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // A directory where the key goes: the rename over it fails.
        std::fs::create_dir_all(dir.path().join("worker-0.key/inside")).unwrap();
        let error = write_certificates(dir.path(), &ca, &issued).unwrap_err();
        assert!(error.to_string().contains("worker-0.key"), "{error}");
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["ca.crt", "worker-0.crt", "worker-0.key"]);
        let cert = std::fs::read_to_string(dir.path().join("worker-0.crt")).unwrap();
        assert_eq!(cert, issued[0].cert_pem);
    }

    #[test]
    fn a_host_that_cannot_be_a_name_is_refused_with_the_task() {
        let tasks = vec![("worker:3".to_string(), vec!["h\u{f4}te".to_string()])];
        let error = issue_certificates("test CA", &tasks).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("cannot issue a certificate for worker:3"),
            "{error}"
        );
    }
}
