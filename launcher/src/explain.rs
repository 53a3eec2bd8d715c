//! `estimator-launch explain`: what TF_CONFIG — or torchrun's, mpirun's or srun's variables —
//! make of this process, for debugging a pod or a local cluster.

use std::fmt::Write;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;

use estimator_cluster::{ClusterConfig, ClusterSource, ClusterSpec, LaunchedRank, Task, TaskType};

use crate::{cpus, gpus};

/// What the process's environment gives it besides TF_CONFIG.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen<'a> {
    /// Its `CUDA_VISIBLE_DEVICES`.
    pub cuda_visible_devices: Option<&'a str>,
    /// Its `OMP_NUM_THREADS`.
    pub omp_num_threads: Option<&'a str>,
    /// The cores it may use.
    pub cores: usize,
}

/// What `explain` prints for `source`: where the cluster comes from, then [`render`]'s
/// description — for a launcher's rank, what its variables say before the rendezvous.
pub fn render_source(
    source: &ClusterSource,
    model_dir: Option<&Path>,
    seen: Seen<'_>,
    resolve: impl Fn(&str) -> std::io::Result<IpAddr>,
) -> String {
    let mut out = String::new();
    match source {
        ClusterSource::TfConfig { config, over } => {
            let _ = match over {
                None => writeln!(out, "source:    TF_CONFIG"),
                Some(launcher) => writeln!(
                    out,
                    "source:    TF_CONFIG (it wins over {} and {}, also set by {launcher})",
                    launcher.rank_variable(),
                    launcher.size_variable()
                ),
            };
            out.push_str(&render(config, model_dir, seen, resolve));
        }
        ClusterSource::Local => {
            out.push_str(
                "source:    none (no TF_CONFIG, and no rank from torchrun, mpirun or srun)\n",
            );
            out.push_str(&render(&ClusterConfig::Local, model_dir, seen, resolve));
        }
        ClusterSource::Launched(rank) => {
            out.push_str(&render_launched(rank, model_dir, seen, resolve));
        }
    }
    out
}

/// A rank a launcher started: its role follows from its rank; its peers' addresses are known
/// only after the rendezvous, whose address is shown with what `resolve` makes of it.
fn render_launched(
    me: &LaunchedRank,
    model_dir: Option<&Path>,
    seen: Seen<'_>,
    resolve: impl Fn(&str) -> std::io::Result<IpAddr>,
) -> String {
    let launcher = me.launcher;
    let model_dir =
        model_dir.map_or_else(|| "(not given)".to_string(), |d| d.display().to_string());
    let task = match me.rank {
        0 => "chief:0".to_string(),
        rank => format!("worker:{}", rank - 1),
    };
    let local = me
        .local_rank
        .map_or(String::new(), |local| format!(", local rank {local}"));
    let at = &me.rendezvous;
    let resolved = match resolve(&at.to_string()) {
        Ok(ip) => format!("resolves to {ip}"),
        Err(reason) => format!("does not resolve: {reason}"),
    };
    let mut out = String::new();
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "{:<11}{value}", format!("{name}:"));
    };
    field(
        "source",
        &format!(
            "{launcher} ({}={}, {}={})",
            launcher.rank_variable(),
            me.rank,
            launcher.size_variable(),
            me.world_size
        ),
    );
    field("task", &task);
    field(
        "chief",
        &if me.rank == 0 {
            "yes (rank 0)".to_string()
        } else {
            format!("no (the chief is rank 0, on {})", at.host)
        },
    );
    field(
        "rank",
        &format!("{} (world size {}{local})", me.rank, me.world_size),
    );
    field("model_dir", &model_dir);
    field(
        "strategy",
        &format!("MultiWorkerMirrored ({} replicas)", me.world_size),
    );
    field("gpus", &gpus::describe(seen.cuda_visible_devices));
    field("threads", &cpus::describe(seen.omp_num_threads, seen.cores));
    field(
        "peers",
        &format!(
            "from the rendezvous at {at} ({}), which {resolved}",
            at.from
        ),
    );
    out
}

/// The description of `config` that `explain` prints: role, chief, rank and world size,
/// model_dir, the strategy the cluster implies, the GPUs and CPU threads what it has `seen`
/// gives it, and every task's address with what `resolve` makes of it.
pub fn render(
    config: &ClusterConfig,
    model_dir: Option<&Path>,
    seen: Seen<'_>,
    resolve: impl Fn(&str) -> std::io::Result<IpAddr>,
) -> String {
    let visible = seen.cuda_visible_devices;
    let threads = cpus::describe(seen.omp_num_threads, seen.cores);
    let model_dir =
        model_dir.map_or_else(|| "(not given)".to_string(), |d| d.display().to_string());
    let mut out = String::new();
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "{:<11}{value}", format!("{name}:"));
    };
    let (cluster, task) = match config {
        ClusterConfig::Local => {
            field("task", "local (TF_CONFIG names no cluster)");
            field("chief", "yes (a local process is its own chief)");
            field("rank", "0 (world size 1)");
            field("model_dir", &model_dir);
            field("strategy", &strategy(config));
            field("gpus", &gpus::describe(visible));
            field("threads", &threads);
            field("peers", "none");
            return out;
        }
        ClusterConfig::Distributed { cluster, task } => (cluster, *task),
    };
    let chief = cluster.chief_task();
    let chief_address = cluster.address(chief).unwrap_or("?");
    let world = cluster.training_tasks().len();
    field("task", &task.to_string());
    field(
        "chief",
        &if config.is_chief() {
            format!("yes ({chief} at {chief_address})")
        } else {
            format!("no (the chief is {chief} at {chief_address})")
        },
    );
    field(
        "rank",
        &match cluster.global_rank(task) {
            Some(rank) => format!("{rank} (world size {world})"),
            None => format!(
                "none: {} tasks are not training replicas (world size {world})",
                task.kind
            ),
        },
    );
    field("model_dir", &model_dir);
    field("strategy", &strategy(config));
    field("gpus", &gpus::describe(visible));
    field("threads", &threads);
    out.push_str("peers:\n");

    let mut rows: Vec<(String, String, String)> = all_tasks(cluster)
        .into_iter()
        .map(|(peer, address)| {
            let name = if peer == task {
                format!("{peer} (this task)")
            } else {
                peer.to_string()
            };
            let resolved = match resolve(address) {
                Ok(ip) => format!("resolves to {ip}"),
                Err(reason) => format!("does not resolve: {reason}"),
            };
            (name, address.to_string(), resolved)
        })
        .collect();
    if cluster.address(task).is_none() {
        rows.push((
            format!("{task} (this task)"),
            "-".to_string(),
            "not listed in the cluster".to_string(),
        ));
    }
    let name_width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let address_width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for (name, address, resolved) in rows {
        let _ = writeln!(
            out,
            "  {name:<name_width$}  {address:<address_width$}  {resolved}"
        );
    }
    out
}

/// The distribution strategy the cluster implies.
pub fn strategy(config: &ClusterConfig) -> String {
    match config {
        ClusterConfig::Local => "OneDevice (local)".to_string(),
        ClusterConfig::Distributed { cluster, .. } if !cluster.ps.is_empty() => {
            format!("ParameterServer ({} ps)", cluster.ps.len())
        }
        ClusterConfig::Distributed { cluster, .. } => {
            let replicas = cluster.training_tasks().len();
            format!(
                "MultiWorkerMirrored ({replicas} replica{})",
                if replicas == 1 { "" } else { "s" }
            )
        }
    }
}

/// Every task the cluster lists, with its address: chief, workers, ps, evaluator.
fn all_tasks(cluster: &ClusterSpec) -> Vec<(Task, &str)> {
    [
        TaskType::Chief,
        TaskType::Worker,
        TaskType::Ps,
        TaskType::Evaluator,
    ]
    .into_iter()
    .flat_map(|kind| {
        cluster
            .addresses(kind)
            .into_iter()
            .enumerate()
            .map(move |(index, address)| (Task { kind, index }, address))
    })
    .collect()
}

/// Resolves a `host:port` address with the system resolver (the first address it gives).
pub fn resolve(address: &str) -> std::io::Result<IpAddr> {
    let mut addresses = address.to_socket_addrs()?;
    addresses.next().map(|a| a.ip()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the resolver returned no address",
        )
    })
}

#[cfg(test)]
mod tests;
