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
    check_file_names(specs, &tasks)?;
    let (ca, issued) = issue_certificates(CA_NAME, &tasks)?;
    let files = write_certificates(dir, &ca, &issued)?;
    let mut written = vec![dir.join("ca.crt")];
    written.extend(files.into_iter().flat_map(|f| [f.cert, f.key]));
    Ok(written)
}

/// Each task's NAME becomes `NAME.crt` and `NAME.key` in the directory (`:` written `-`, as
/// [`write_certificates`] does): a name that would write elsewhere, over the CA's `ca.crt`,
/// or over another task's files would leave a certificate silently missing or replaced.
fn check_file_names(specs: &[String], tasks: &[(String, Vec<String>)]) -> Result<(), LaunchError> {
    let mut stems: Vec<(String, &String)> = Vec::with_capacity(tasks.len());
    for (spec, (name, _)) in specs.iter().zip(tasks) {
        let refuse = |reason: String| LaunchError::TaskName {
            spec: spec.clone(),
            reason,
        };
        let stem = name.replace(':', "-");
        if stem.contains(['/', '\\']) || stem == "." || stem == ".." {
            return Err(refuse(format!(
                "NAME '{name}' is no file name (no / or \\, not . or ..)"
            )));
        }
        if stem.eq_ignore_ascii_case("ca") {
            return Err(refuse(format!(
                "NAME '{name}' would write its certificate over the CA's ca.crt"
            )));
        }
        if let Some((_, earlier)) = stems.iter().find(|(s, _)| *s == stem) {
            return Err(refuse(format!(
                "NAME '{name}' would write {stem}.crt and {stem}.key over those of --task \
                 '{earlier}'"
            )));
        }
        stems.push((stem, spec));
    }
    Ok(())
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

    #[test]
    fn task_names_must_give_files_of_their_own_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        for specs in [
            &["ca=h"][..],
            &["CA=h"],
            &["../escape=h"],
            &["a/b=h"],
            &[".=h"],
            &["..=h"],
            &["a=h1", "a=h2"],
            &["worker:0=h", "worker-0=h"],
        ] {
            let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
            let error = issue_for(&specs, &out).unwrap_err();
            assert!(matches!(error, LaunchError::TaskName { .. }), "{error}");
            assert!(error.to_string().starts_with("--task '"), "{error}");
        }
        // Nothing written: neither outside the directory nor in it.
        assert!(!out.exists());
        assert!(!dir.path().join("escape.crt").exists());
    }
}
