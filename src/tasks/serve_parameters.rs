//! Running this process as a ps task of a TF_CONFIG cluster.

use std::net::TcpListener;
use std::time::Duration;

use crate::cluster::{cluster_token_from_env, ClusterConfig, TaskType};
use crate::distribute::ps::{serve, PsServerConfig, VariableOptimizer};
use crate::distribute::{listen_address, wait_from_secs, ClusterTls};
use crate::error::{Error, Result};
use crate::estimator::Estimator;

/// Longest wait for training tasks to leave after the chief's shutdown (or to hear that the
/// chief was lost) before a ps task exits anyway.
const MAX_GRACE: Duration = Duration::from_secs(30);

/// Serves this ps task's shard of `estimator`'s variables (`task.type = ps` in its run
/// configuration's cluster, or TF_CONFIG's) until
/// the chief says the job is done — `Ok`, exit 0 — or vanishes for longer than
/// `peer_timeout_secs` — [`Error::PeerLost`] naming the chief, a retryable exit code.
///
/// Unlike TF's `server.join()`, the task ends by itself. A restarted ps task comes up empty;
/// the chief notices and puts its latest checkpoint back on every ps.
pub fn serve_parameters<E: Estimator>(estimator: &E) -> Result<()> {
    serve_parameters_in(&estimator.run_config().resolve_cluster()?, estimator)
}

/// [`serve_parameters`] as the ps task `cluster` describes.
pub fn serve_parameters_in<E: Estimator>(cluster: &ClusterConfig, estimator: &E) -> Result<()> {
    crate::host_heap::keep_freed_memory();
    let (spec, task) = match cluster {
        ClusterConfig::Distributed { cluster, task } if task.kind == TaskType::Ps => {
            (cluster, *task)
        }
        _ => {
            return Err(Error::Config(
                "serving variables needs TF_CONFIG with task.type = ps".into(),
            ))
        }
    };
    let address = spec.address(task).ok_or_else(|| {
        Error::Config(format!(
            "TF_CONFIG.task.index = {} but TF_CONFIG.cluster.ps lists {} task(s)",
            task.index,
            spec.ps.len()
        ))
    })?;
    let listen = listen_address(address)
        .map_err(|e| Error::Config(format!("TF_CONFIG.cluster.ps[{}]: {e}", task.index)))?;
    let listener = TcpListener::bind(listen)
        .map_err(|e| Error::Config(format!("{task} cannot listen on {listen}: {e}")))?;
    let config = estimator.run_config();
    let peer_timeout = wait_from_secs(config.peer_timeout_secs);
    let chief_name = spec.chief_task().to_string();
    let server_config = PsServerConfig {
        chief_name: chief_name.clone(),
        chief_timeout: peer_timeout,
        startup_timeout: wait_from_secs(config.startup_timeout_secs),
        grace: peer_timeout.min(MAX_GRACE),
        token: cluster_token_from_env()?,
        tls: ClusterTls::from_env()?,
    };
    tracing::info!("{task} serving variables on {listen}");
    serve(
        listener,
        VariableOptimizer::new(&estimator.optimizer()),
        server_config,
    )
}
