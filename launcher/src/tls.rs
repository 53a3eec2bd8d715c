//! Certificates for mutual TLS between the tasks: issued per launch (`--tls-dir`), or for
//! a cluster elsewhere (`estimator-launch certs`, a Kubernetes Secret).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use estimator_cluster::{
    issue_certificates, write_certificates, Task, TlsFiles, TLS_CA, TLS_CERT, TLS_KEY,
};

use crate::error::LaunchError;
use crate::layout::Layout;

/// Name of the CA a launcher makes.
const CA_NAME: &str = "estimator-launch cluster CA";

/// Each task's certificate, key and the CA, as files.
#[derive(Debug)]
pub struct TaskCertificates {
    files: HashMap<Task, TlsFiles>,
}

impl TaskCertificates {
    /// A new CA and a certificate for every task of `layout` (named after it, `CN=worker:0`,
    /// valid for `host` and localhost), written to `dir`.
    pub fn issue(layout: &Layout, host: &str, dir: &Path) -> Result<Self, LaunchError> {
        let mut hosts = vec![host.to_string()];
        if host != "localhost" {
            hosts.push("localhost".to_string());
        }
        let tasks: Vec<_> = layout
            .tasks
            .iter()
            .map(|task| (task.to_string(), hosts.clone()))
            .collect();
        let (ca, issued) = issue_certificates(CA_NAME, &tasks)?;
        let files = write_certificates(dir, &ca, &issued)?;
        Ok(Self {
            files: layout.tasks.iter().copied().zip(files).collect(),
        })
    }

    /// The variables that give `task` its files.
    pub fn env(&self, task: Task) -> Vec<(&'static str, &Path)> {
        let files = &self.files[&task];
        vec![
            (TLS_CERT, files.cert.as_path()),
            (TLS_KEY, files.key.as_path()),
            (TLS_CA, files.ca.as_path()),
        ]
    }
}

/// Certificates for the tasks `specs` describe (`NAME=HOST[,HOST…]`: the certificate of
/// NAME is valid for those hosts), written to `dir` with the CA; the files written.
pub fn issue_for(specs: &[String], dir: &Path) -> Result<Vec<PathBuf>, LaunchError> {
    let tasks = specs
        .iter()
        .map(|spec| parse_task(spec))
        .collect::<Result<Vec<_>, _>>()?;
    let (ca, issued) = issue_certificates(CA_NAME, &tasks)?;
    let files = write_certificates(dir, &ca, &issued)?;
    let mut written = vec![dir.join("ca.crt")];
    written.extend(files.into_iter().flat_map(|f| [f.cert, f.key]));
    Ok(written)
}

fn parse_task(spec: &str) -> Result<(String, Vec<String>), LaunchError> {
    let (name, hosts) = spec
        .split_once('=')
        .ok_or_else(|| LaunchError::TaskSpec(spec.to_string()))?;
    let hosts: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect();
    if name.trim().is_empty() || hosts.is_empty() {
        return Err(LaunchError::TaskSpec(spec.to_string()));
    }
    Ok((name.trim().to_string(), hosts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Roles;

    #[test]
    fn each_task_of_a_launch_gets_its_own_files() {
        let roles = Roles {
            chief: true,
            workers: 1,
            ps: 1,
            evaluator: false,
        };
        let layout = Layout::new(roles, "127.0.0.1", &[1, 2, 3]);
        let dir = tempfile::tempdir().unwrap();
        let certificates = TaskCertificates::issue(&layout, "127.0.0.1", dir.path()).unwrap();
        let worker = layout.tasks[1];
        let env = certificates.env(worker);
        assert_eq!(
            env[0],
            (TLS_CERT, dir.path().join("worker-0.crt").as_path())
        );
        assert_eq!(env[2], (TLS_CA, dir.path().join("ca.crt").as_path()));
        assert!(env.iter().all(|(_, path)| path.is_file()));
    }

    #[test]
    fn task_specs_need_a_name_and_a_host() {
        let dir = tempfile::tempdir().unwrap();
        let specs = ["job-chief-0=job-chief-0.ns.svc,10.0.0.1".to_string()];
        let written = issue_for(&specs, dir.path()).unwrap();
        assert_eq!(written.len(), 3);
        assert!(written[1].ends_with("job-chief-0.crt"));
        for bad in ["job-chief-0", "=host", "name="] {
            let error = issue_for(&[bad.to_string()], dir.path()).unwrap_err();
            assert!(matches!(&error, LaunchError::TaskSpec(spec) if spec == bad));
            assert!(error.to_string().starts_with(&format!("--task '{bad}'")));
        }
    }
}
