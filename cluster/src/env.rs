//! The one place that reads the environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::credential_variables::{CLUSTER_TOKEN, CLUSTER_TOKEN_FILE};
use crate::launched::{launched_rank, LaunchedRank, Launcher};
use crate::rendezvous::rendezvous;
use crate::{ClusterConfig, Error};

/// Name of the environment variable TensorFlow and Kubeflow write the cluster to.
pub const TF_CONFIG: &str = "TF_CONFIG";

/// Name of the environment variable that turns the same-host lane off (`0`, `false`, `off`
/// or `no`): every message then goes over gRPC, also between tasks on one machine.
pub const SAME_HOST_LANE: &str = "ESTIMATOR_SAME_HOST_LANE";

/// Whether tasks on one machine may talk over the same-host lane, as `$ESTIMATOR_SAME_HOST_LANE`
/// says: yes unless it is `0`, `false`, `off` or `no` (any case).
pub fn same_host_lane_from_env() -> bool {
    same_host_lane_wanted(std::env::var(SAME_HOST_LANE).ok().as_deref())
}

/// Whether the lane is wanted given the variable's `value` (unset: yes).
pub fn same_host_lane_wanted(value: Option<&str>) -> bool {
    let Some(value) = value.map(str::trim) else {
        return true;
    };
    let off = ["0", "false", "off", "no"];
    !off.iter().any(|word| value.eq_ignore_ascii_case(word))
}

/// Name of the environment variable that turns the same-host lane's shared memory off (`0`,
/// `false`, `off` or `no`): every message on a lane then crosses its socket.
pub const SHARED_MEMORY: &str = "ESTIMATOR_SHARED_MEMORY";

/// Whether a same-host lane may carry large messages through memory shared with the peer,
/// as `$ESTIMATOR_SHARED_MEMORY` says: yes unless it is `0`, `false`, `off` or `no`.
pub fn shared_memory_from_env() -> bool {
    same_host_lane_wanted(std::env::var(SHARED_MEMORY).ok().as_deref())
}

/// Name of the environment variable that keeps the all-reduce's ring in rank order (`0`,
/// `false`, `off` or `no`) instead of putting the tasks of one machine next to each other.
pub const RING_BY_HOST: &str = "ESTIMATOR_RING_BY_HOST";

/// Whether the ring groups the tasks of one machine, as `$ESTIMATOR_RING_BY_HOST` says: yes
/// unless it is `0`, `false`, `off` or `no` (any case).
pub fn ring_by_host_from_env() -> bool {
    same_host_lane_wanted(std::env::var(RING_BY_HOST).ok().as_deref())
}

/// Name of the environment variable that turns the hierarchical all-reduce on (`1`, `true`,
/// `on` or `yes`; Horovod's `HOROVOD_HIERARCHICAL_ALLREDUCE`): large gradients are summed
/// within each machine, across machines one part per task, then spread within each machine.
pub const HIERARCHICAL_ALLREDUCE: &str = "ESTIMATOR_HIERARCHICAL_ALLREDUCE";

/// Whether `$ESTIMATOR_HIERARCHICAL_ALLREDUCE` asks for the hierarchical all-reduce: no
/// unless it is `1`, `true`, `on` or `yes` (any case).
pub fn hierarchical_allreduce_from_env() -> bool {
    let value = std::env::var(HIERARCHICAL_ALLREDUCE).unwrap_or_default();
    let on = ["1", "true", "on", "yes"];
    on.iter()
        .any(|word| value.trim().eq_ignore_ascii_case(word))
}

/// Name of the environment variable that says which machine this task is on, for the
/// ring's order (NCCL's `NCCL_HOSTID`): tasks giving the same value count as one machine.
pub const HOST_ID: &str = "ESTIMATOR_HOST_ID";

/// Which machine this task runs on: `$ESTIMATOR_HOST_ID` when set and not blank, else the
/// running kernel's boot id (shared by every container and pod on one machine, and by
/// nothing else), else the host name.
pub fn host_id() -> String {
    let set = std::env::var(HOST_ID).ok().filter(|v| !v.trim().is_empty());
    set.or_else(|| std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok())
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(hostname)
}

/// Name of the environment variable that sets how long a wait for a collective's message
/// polls before it sleeps, in microseconds (`0`: sleep at once; default 1000).
pub const BUSY_POLL_US: &str = "ESTIMATOR_BUSY_POLL_US";

/// How long a wait for a message polls before it sleeps, as `$ESTIMATOR_BUSY_POLL_US` says;
/// `None` when unset, an error naming the variable when it is not a number of
/// microseconds.
pub fn busy_poll_from_env() -> Option<Result<Duration, Error>> {
    std::env::var(BUSY_POLL_US)
        .ok()
        .map(|v| parse_busy_poll(&v))
}

/// A value of `ESTIMATOR_BUSY_POLL_US` as a duration.
pub fn parse_busy_poll(value: &str) -> Result<Duration, Error> {
    value
        .trim()
        .parse::<u64>()
        .map(Duration::from_micros)
        .map_err(|_| {
            Error::variable(
                BUSY_POLL_US,
                format!("{BUSY_POLL_US}={value:?} is not a number of microseconds"),
            )
        })
}

/// Name of the environment variable bounding the rendezvous of ranks a launcher started, in
/// seconds (default [`DEFAULT_RENDEZVOUS_TIMEOUT_SECS`]).
pub const RENDEZVOUS_TIMEOUT_SECS: &str = "ESTIMATOR_RENDEZVOUS_TIMEOUT_SECS";

/// The rendezvous' default bound: the transport's default start-up timeout, since rank 0
/// may be the last process to start.
pub const DEFAULT_RENDEZVOUS_TIMEOUT_SECS: u64 = 300;

/// Where this process's cluster comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterSource {
    /// `$TF_CONFIG`, set and not blank: it wins over any launcher's variables.
    TfConfig {
        /// What it says.
        config: ClusterConfig,
        /// A launcher whose variables are set too, and ignored.
        over: Option<Launcher>,
    },
    /// A launcher's variables (torchrun, mpirun, srun): the cluster is known once the ranks
    /// have met at rank 0 ([`cluster_from_env`]).
    Launched(LaunchedRank),
    /// Neither: a local process.
    Local,
}

/// Where this process's cluster comes from, read without meeting anyone: TF_CONFIG when it
/// is set and not blank, else a launcher's variables ([`launched_rank`]), else local.
pub fn cluster_source_from_env() -> Result<ClusterSource, Error> {
    // Bytes that are not text fail as a value that is not a number, naming the variable.
    let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    match std::env::var(TF_CONFIG) {
        Ok(text) if !text.trim().is_empty() => {
            let config = ClusterConfig::parse(&text)?;
            let over = launched_rank(var).ok().flatten().map(|rank| rank.launcher);
            return Ok(ClusterSource::TfConfig { config, over });
        }
        Ok(_) | Err(std::env::VarError::NotPresent) => {}
        // Training alone when a cluster was meant would be silently wrong.
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Error::tf_config(" is set but is not valid UTF-8"))
        }
    }
    Ok(match launched_rank(var)? {
        Some(rank) => ClusterSource::Launched(rank),
        None => ClusterSource::Local,
    })
}

/// The cluster this process belongs to: `$TF_CONFIG`'s; else, for a rank that torchrun,
/// mpirun or srun started, the cluster its world forms, rank 0 the chief, after the
/// rendezvous at rank 0 (once per process: later calls return the same cluster); else local.
pub fn cluster_from_env() -> Result<ClusterConfig, Error> {
    let rank = match cluster_source_from_env()? {
        ClusterSource::TfConfig { config, .. } => return Ok(config),
        ClusterSource::Local => return Ok(ClusterConfig::Local),
        ClusterSource::Launched(rank) => rank,
    };
    // A second rendezvous would find rank 0 gone: the ports picked by the first are the ones
    // the peers were told.
    static MET: OnceLock<Result<ClusterConfig, Error>> = OnceLock::new();
    MET.get_or_init(|| {
        let token = cluster_token_from_env()?;
        let timeout = rendezvous_timeout(std::env::var(RENDEZVOUS_TIMEOUT_SECS).ok().as_deref())?;
        rendezvous(&rank, token.as_deref(), timeout)
    })
    .clone()
}

/// The rendezvous' bound from the variable's `value` (unset: the default).
fn rendezvous_timeout(value: Option<&str>) -> Result<Duration, Error> {
    match value.map(str::trim) {
        None => Ok(Duration::from_secs(DEFAULT_RENDEZVOUS_TIMEOUT_SECS)),
        Some(text) => match text.parse::<u64>() {
            Ok(secs) if (1..=86_400).contains(&secs) => Ok(Duration::from_secs(secs)),
            _ => Err(Error::variable(
                RENDEZVOUS_TIMEOUT_SECS,
                format!(
                "{RENDEZVOUS_TIMEOUT_SECS} = '{text}' is not a number of seconds from 1 to 86400"
            ),
            )),
        },
    }
}

/// This machine's host name, trimmed: the kernel's, else `$HOSTNAME`, else `$COMPUTERNAME`
/// (Windows); `localhost` when none is known.
pub fn hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|name| name.trim().to_string())
        .unwrap_or_default();
    if name.is_empty() {
        "localhost".to_string()
    } else {
        name
    }
}

/// The token every rank of the cluster must present (`estimator`'s
/// `distribute::GrpcConfig::token`): `$ESTIMATOR_CLUSTER_TOKEN`,
/// or the content of the file `$ESTIMATOR_CLUSTER_TOKEN_FILE` names, trimmed. `None` when
/// neither is set. Setting both, an empty token or an unreadable file is an error.
pub fn cluster_token_from_env() -> Result<Option<String>, Error> {
    token_from(
        std::env::var_os(CLUSTER_TOKEN),
        std::env::var_os(CLUSTER_TOKEN_FILE),
    )
}

fn token_from(token: Option<OsString>, file: Option<OsString>) -> Result<Option<String>, Error> {
    let token = match (token, file) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(Error::TokenTwice),
        (Some(token), None) => token.into_string().map_err(|_| Error::TokenNotUtf8)?,
        (None, Some(path)) => {
            let path = PathBuf::from(path);
            let text = std::fs::read_to_string(&path).map_err(|source| Error::TokenUnreadable {
                path,
                source: source.into(),
            })?;
            text.trim().to_string()
        }
    };
    if token.is_empty() {
        return Err(Error::TokenEmpty);
    }
    Ok(Some(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_host_lane_is_on_unless_the_variable_turns_it_off() {
        for on in [None, Some("1"), Some("true"), Some("")] {
            assert!(same_host_lane_wanted(on), "{on:?}");
        }
        for off in ["0", "false", "OFF", " no "] {
            assert!(!same_host_lane_wanted(Some(off)), "{off}");
        }
    }

    #[test]
    fn the_busy_poll_is_a_number_of_microseconds() {
        assert_eq!(parse_busy_poll("250").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_busy_poll(" 0 ").unwrap(), Duration::ZERO);
        for bad in ["", "1ms", "-5", "fast"] {
            let err = parse_busy_poll(bad).unwrap_err().to_string();
            assert!(err.contains(BUSY_POLL_US), "{bad:?}: {err}");
            assert!(
                err.contains("not a number of microseconds"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn the_rendezvous_bound_is_a_positive_number_of_seconds() {
        assert_eq!(rendezvous_timeout(None).unwrap(), Duration::from_secs(300));
        assert_eq!(
            rendezvous_timeout(Some(" 20 ")).unwrap(),
            Duration::from_secs(20)
        );
        for bad in ["0", "-1", "soon", "86401"] {
            let message = rendezvous_timeout(Some(bad)).unwrap_err().to_string();
            assert!(
                message.starts_with(&format!("ESTIMATOR_RENDEZVOUS_TIMEOUT_SECS = '{bad}'")),
                "{message}"
            );
        }
    }

    #[test]
    fn the_host_name_is_never_empty() {
        let host = hostname();
        assert!(!host.is_empty());
        assert_eq!(host, host.trim());
    }

    #[test]
    fn the_token_comes_from_the_variable_or_the_file() {
        assert_eq!(token_from(None, None).unwrap(), None);
        assert_eq!(
            token_from(Some("s3cret".into()), None).unwrap(),
            Some("s3cret".into())
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  s3cret\n").unwrap();
        assert_eq!(
            token_from(None, Some(file.clone().into())).unwrap(),
            Some("s3cret".into())
        );
        let both = token_from(Some("x".into()), Some(file.into()))
            .unwrap_err()
            .to_string();
        assert!(
            both.starts_with("both ESTIMATOR_CLUSTER_TOKEN and"),
            "{both}"
        );
    }

    #[test]
    fn an_unreadable_file_or_an_empty_token_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = token_from(None, Some(missing.clone().into()))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "cannot read the cluster token from {}",
                missing.display()
            )),
            "{err}"
        );
        let blank = dir.path().join("blank");
        std::fs::write(&blank, "\n").unwrap();
        let err = token_from(None, Some(blank.into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is empty"), "{err}");
        assert!(token_from(Some("".into()), None).is_err());
    }
}
