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
mod tests {
    use super::*;

    fn fake(address: &str) -> std::io::Result<IpAddr> {
        match address.split_once(".invalid") {
            Some(_) => Err(std::io::Error::other("Name or service not known")),
            None => Ok("10.0.0.7".parse().unwrap()),
        }
    }

    fn parse(text: &str) -> ClusterConfig {
        ClusterConfig::parse(text).unwrap()
    }

    #[test]
    fn a_kubeflow_worker_with_ps_and_an_unresolvable_peer() {
        let config = parse(
            r#"{"cluster": {"chief": ["job-chief-0:2222"], "worker": ["job-worker-0:2222",
                "job-worker-1.invalid:2222"], "ps": ["job-ps-0:2222"]},
                "task": {"type": "worker", "index": 1}, "environment": "cloud"}"#,
        );
        let seen = Seen {
            cuda_visible_devices: Some("1"),
            omp_num_threads: Some("2"),
            cores: 16,
        };
        let text = render(&config, Some(Path::new("/model/iris")), seen, fake);
        let expected = "\
task:      worker:1
chief:     no (the chief is chief:0 at job-chief-0:2222)
rank:      2 (world size 3)
model_dir: /model/iris
strategy:  ParameterServer (1 ps)
gpus:      cuda is GPU 1 (CUDA_VISIBLE_DEVICES=1)
threads:   up to 2 per operation (OMP_NUM_THREADS=2)
peers:
  chief:0               job-chief-0:2222           resolves to 10.0.0.7
  worker:0              job-worker-0:2222          resolves to 10.0.0.7
  worker:1 (this task)  job-worker-1.invalid:2222  does not resolve: Name or service not known
  ps:0                  job-ps-0:2222              resolves to 10.0.0.7
";
        assert_eq!(text, expected);
    }

    #[test]
    fn chief_ps_and_evaluator_outside_the_cluster() {
        let chief = render(
            &parse(r#"{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker"}}"#),
            None,
            Seen::default(),
            fake,
        );
        assert!(
            chief.contains("chief:     yes (worker:0 at a:1)"),
            "{chief}"
        );
        assert!(chief.contains("rank:      0 (world size 2)"), "{chief}");
        assert!(chief.contains("model_dir: (not given)"), "{chief}");
        assert!(
            chief.contains("MultiWorkerMirrored (2 replicas)"),
            "{chief}"
        );

        let ps = render(
            &parse(r#"{"cluster": {"chief": ["c:1"], "ps": ["p:2"]}, "task": {"type": "ps"}}"#),
            None,
            Seen::default(),
            fake,
        );
        assert!(ps.contains("rank:      none: ps tasks"), "{ps}");

        let evaluator = render(
            &parse(r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator"}}"#),
            None,
            Seen::default(),
            fake,
        );
        assert!(
            evaluator.contains("evaluator:0 (this task)  -    not listed in the cluster"),
            "{evaluator}"
        );
    }

    #[test]
    fn local_is_one_device() {
        let seen = Seen {
            cores: 4,
            ..Seen::default()
        };
        let text = render(&ClusterConfig::Local, None, seen, fake);
        assert!(text.starts_with("task:      local"), "{text}");
        assert!(text.contains("strategy:  OneDevice (local)"), "{text}");
        assert!(text.contains("peers:     none"), "{text}");
        assert!(
            text.contains("gpus:      all (CUDA_VISIBLE_DEVICES not set)"),
            "{text}"
        );
        assert!(
            text.contains("threads:   up to 4 per operation (the cores; OMP_NUM_THREADS not set)"),
            "{text}"
        );
    }

    #[test]
    fn a_torchrun_rank_is_described_before_the_rendezvous() {
        let rank = estimator_cluster::launched_rank(|name| {
            let value = match name {
                "RANK" => "2",
                "WORLD_SIZE" => "3",
                "LOCAL_RANK" => "0",
                "MASTER_ADDR" => "job-master-0",
                "MASTER_PORT" => "23456",
                _ => return None,
            };
            Some(value.to_string())
        })
        .unwrap()
        .unwrap();
        let seen = Seen {
            cores: 4,
            ..Seen::default()
        };
        let text = render_source(&ClusterSource::Launched(rank), None, seen, fake);
        let expected = "\
source:    torchrun (RANK=2, WORLD_SIZE=3)
task:      worker:1
chief:     no (the chief is rank 0, on job-master-0)
rank:      2 (world size 3, local rank 0)
model_dir: (not given)
strategy:  MultiWorkerMirrored (3 replicas)
gpus:      all (CUDA_VISIBLE_DEVICES not set): cuda:N is GPU N
threads:   up to 4 per operation (the cores; OMP_NUM_THREADS not set)
peers:     from the rendezvous at job-master-0:23456 (MASTER_ADDR, MASTER_PORT), which resolves to 10.0.0.7
";
        assert_eq!(text, expected);
    }

    #[test]
    fn tf_config_says_it_wins_and_local_says_why() {
        let config = parse(r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}}"#);
        let source = ClusterSource::TfConfig {
            config,
            over: Some(estimator_cluster::Launcher::OpenMpi),
        };
        let text = render_source(&source, None, Seen::default(), fake);
        assert!(
            text.starts_with(
                "source:    TF_CONFIG (it wins over OMPI_COMM_WORLD_RANK and \
                 OMPI_COMM_WORLD_SIZE, also set by Open MPI's mpirun)\ntask:      chief:0\n"
            ),
            "{text}"
        );
        let local = render_source(&ClusterSource::Local, None, Seen::default(), fake);
        assert!(
            local.starts_with("source:    none (no TF_CONFIG, and no rank from torchrun")
                && local.contains("\ntask:      local"),
            "{local}"
        );
    }

    #[test]
    fn the_system_resolver_reads_ip_literals_and_names_a_failure() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(resolve("127.0.0.1:80").unwrap(), ip);
        assert!(resolve("no-port").is_err());
    }
}
