//! Which distribution strategy a run uses, chosen once from the run configuration and the
//! cluster (TF's `tf.distribute.Strategy`).

use serde::{Deserialize, Serialize};

use std::sync::Arc;
use std::time::Duration;

use super::ps::{PsClientConfig, PsReplica};
use super::{ring_layout_of_cluster, ClusterTls, GrpcConfig, GrpcTransport, Replica, RingLayout};
use crate::cluster::{
    busy_poll_from_env, hierarchical_allreduce_from_env, ring_by_host_from_env,
    same_host_lane_from_env, shared_memory_from_env, ClusterConfig, TaskType,
};
use crate::device::{DeviceSpec, ResolvedDevice};
use crate::error::{Error, Result};

/// What the user asks for in [`RunConfig`](crate::RunConfig) (TF's `train_distribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// One replica when TF_CONFIG names no cluster, MultiWorkerMirrored when it does.
    #[default]
    Auto,
    /// Always one replica on the configured device.
    OneDevice,
    /// `replicas` replicas in this process (TF's `MirroredStrategy`).
    Mirrored {
        /// Number of replicas, each training on its own batch.
        replicas: usize,
    },
    /// One replica per device this process sees (TF's `MirroredStrategy()` with no device
    /// list): on CUDA every visible GPU from the configured one on (`CUDA_VISIBLE_DEVICES`
    /// decides which are visible), on the CPU one replica.
    MirroredAllDevices,
}

impl Distribution {
    /// `MirroredAllDevices` as the number of replicas `devices` gives (`devices` is asked
    /// only then); the others as they are.
    fn with_device_count(self, devices: impl FnOnce() -> Result<usize>) -> Result<Self> {
        match self {
            Distribution::MirroredAllDevices => Ok(Distribution::Mirrored {
                replicas: devices()?.max(1),
            }),
            other => Ok(other),
        }
    }

    /// This distribution on `device`: `MirroredAllDevices` as one replica per device from
    /// the configured one on (one on the CPU). On CUDA each in-process replica takes a GPU
    /// of its own, so an explicit replica count must fit in the GPUs from there on.
    pub fn on_device(self, device: DeviceSpec) -> Result<Self> {
        let resolved = self.with_device_count(|| device.devices_from_here())?;
        if let Distribution::Mirrored { replicas } = resolved {
            if let ResolvedDevice::Cuda(index) = device.resolve()? {
                replicas_fit(replicas, index, device.devices_from_here()?)?;
            }
        }
        Ok(resolved)
    }
}

/// Whether `replicas` replicas, one CUDA device each from `cuda:index` on, fit in the
/// `available` devices from there on.
fn replicas_fit(replicas: usize, index: usize, available: usize) -> Result<()> {
    if replicas <= available {
        return Ok(());
    }
    Err(Error::Config(format!(
        "train_distribute: {replicas} mirrored replicas need one CUDA device each (cuda:{index} \
         to cuda:{}), but this process sees {available} from cuda:{index} on \
         (CUDA_VISIBLE_DEVICES decides which devices are visible)",
        index + replicas - 1
    )))
}

/// The strategy a run uses, resolved from a [`Distribution`] and the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategyPlan {
    /// One replica on the configured device.
    OneDevice,
    /// Replicas in threads of this process, gradients averaged over an in-memory ring.
    Mirrored {
        /// Number of replicas.
        replicas: usize,
    },
    /// This process is one replica of a cluster; gradients are averaged over the network.
    MultiWorkerMirrored {
        /// Training tasks' addresses in rank order (chief first).
        addresses: Vec<String>,
        /// Training tasks' names in rank order ("chief:0", "worker:0", …).
        names: Vec<String>,
        /// This task's rank.
        rank: usize,
    },
    /// This process is one training task of a cluster with ps tasks: it pulls variables from
    /// them and pushes gradients to them.
    ParameterServer {
        /// The ps tasks' addresses, by index.
        ps_addresses: Vec<String>,
        /// Training tasks' names in rank order ("chief:0", "worker:0", …).
        names: Vec<String>,
        /// This task's rank.
        rank: usize,
    },
}

impl StrategyPlan {
    /// The strategy for `distribution` in `cluster`; a cluster this strategy cannot train
    /// in is a configuration error naming the TF_CONFIG field at fault.
    pub fn choose(distribution: Distribution, cluster: &ClusterConfig) -> Result<Self> {
        let (spec, task) = match cluster {
            ClusterConfig::Local => {
                return Ok(match distribution {
                    Distribution::Auto | Distribution::OneDevice => StrategyPlan::OneDevice,
                    Distribution::Mirrored { replicas: 0 } => {
                        return Err(Error::Config(
                            "Mirrored strategy needs at least one replica".into(),
                        ))
                    }
                    Distribution::Mirrored { replicas: 1 } => StrategyPlan::OneDevice,
                    Distribution::Mirrored { replicas } => StrategyPlan::Mirrored { replicas },
                    Distribution::MirroredAllDevices => {
                        return Err(Error::Config(
                            "MirroredAllDevices must be resolved to a number of replicas \
                             (Distribution::on_device) before a strategy is chosen"
                                .into(),
                        ))
                    }
                })
            }
            ClusterConfig::Distributed { cluster, task } => (cluster, *task),
        };
        if distribution != Distribution::Auto {
            return Err(Error::Config(format!(
                "TF_CONFIG describes a cluster, but the run configuration asks for the \
                 {distribution:?} strategy, which runs in one process"
            )));
        }
        let Some(rank) = spec.global_rank(task) else {
            return Err(Error::Config(format!(
                "TF_CONFIG.task.type = {}: this task does not train; run it with \
                 train_and_evaluate",
                task.kind
            )));
        };
        debug_assert_ne!(task.kind, TaskType::Ps);
        let tasks = spec.training_tasks();
        let names = tasks.iter().map(ToString::to_string).collect();
        if !spec.ps.is_empty() {
            return Ok(StrategyPlan::ParameterServer {
                ps_addresses: spec.ps.clone(),
                names,
                rank,
            });
        }
        let addresses = tasks
            .iter()
            .map(|t| spec.address(*t).unwrap_or_default().to_string())
            .collect();
        Ok(StrategyPlan::MultiWorkerMirrored {
            addresses,
            names,
            rank,
        })
    }

    /// How many replicas train together.
    pub fn num_replicas(&self) -> usize {
        match self {
            StrategyPlan::OneDevice => 1,
            StrategyPlan::Mirrored { replicas } => *replicas,
            StrategyPlan::MultiWorkerMirrored { addresses, .. } => addresses.len(),
            StrategyPlan::ParameterServer { names, .. } => names.len(),
        }
    }
}

/// How a run trains: the resolved [`StrategyPlan`], connected.
#[derive(Debug)]
pub enum Strategy {
    /// One replica on the configured device.
    OneDevice,
    /// `replicas` replicas in threads of this process.
    Mirrored {
        /// Number of replicas.
        replicas: usize,
    },
    /// This process is one replica of a cluster, connected to the others.
    MultiWorkerMirrored(Replica),
    /// This process is one training task of a cluster with ps tasks, connected to them.
    ParameterServer(PsReplica),
}

/// What connecting to the peers takes: how long to wait, and the cluster's token.
#[derive(Debug, Clone, Default)]
pub struct ConnectConfig {
    /// How long a silent peer is waited for before it counts as lost.
    pub peer_timeout: Duration,
    /// How long to wait at start for every peer to come up.
    pub startup_timeout: Duration,
    /// How long a wait for a peer lasts before it is logged as a stall.
    pub stall_warning: Duration,
    /// The token every task of the cluster presents, if the cluster has one.
    pub token: Option<String>,
    /// Mutual TLS between the tasks, if the cluster uses it.
    pub tls: Option<Arc<ClusterTls>>,
}

impl Strategy {
    /// Connects `plan`'s replicas; in a cluster this waits up to `config.startup_timeout`
    /// for every peer.
    pub fn connect(plan: StrategyPlan, config: &ConnectConfig) -> Result<Self> {
        Ok(match plan {
            StrategyPlan::OneDevice => Strategy::OneDevice,
            StrategyPlan::Mirrored { replicas } => Strategy::Mirrored { replicas },
            StrategyPlan::MultiWorkerMirrored {
                addresses,
                names,
                rank,
            } => {
                let grpc = GrpcConfig {
                    peer_timeout: config.peer_timeout,
                    connect_timeout: config.startup_timeout,
                    stall_warning: config.stall_warning,
                    names: names.clone(),
                    token: config.token.clone(),
                    tls: config.tls.clone(),
                    same_host_lane: same_host_lane_from_env(),
                    shared_memory: shared_memory_from_env(),
                    busy_poll: busy_poll_from_env()
                        .transpose()?
                        .unwrap_or(GrpcConfig::default().busy_poll),
                    ..GrpcConfig::default()
                };
                tracing::info!(
                    "{} (rank {rank} of {}): connecting to {}",
                    names[rank],
                    names.len(),
                    addresses.join(", ")
                );
                let mut transport = GrpcTransport::connect(rank, &addresses, grpc)
                    .map_err(|error| Replica::naming(&names, error))?;
                let hierarchical = hierarchical_allreduce_from_env();
                let layout = match ring_by_host_from_env() {
                    true => ring_layout_of_cluster(&mut transport, &names, hierarchical)?,
                    false => RingLayout::default(),
                };
                let replica = Replica::new(Box::new(transport), names).with_ring_layout(layout);
                Strategy::MultiWorkerMirrored(replica)
            }
            StrategyPlan::ParameterServer {
                ps_addresses,
                names,
                rank,
            } => {
                let ps_config = PsClientConfig {
                    peer_timeout: config.peer_timeout,
                    startup_timeout: config.startup_timeout,
                    token: config.token.clone(),
                    tls: config.tls.clone(),
                };
                tracing::info!(
                    "{} (rank {rank} of {} training tasks): variables on {}",
                    names[rank],
                    names.len(),
                    ps_addresses.join(", ")
                );
                Strategy::ParameterServer(PsReplica::connect(
                    &ps_addresses,
                    rank,
                    names,
                    ps_config,
                )?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(json: &str) -> ClusterConfig {
        ClusterConfig::parse(json).unwrap()
    }

    #[test]
    fn local_runs_pick_one_device_or_mirrored() {
        let local = ClusterConfig::Local;
        assert_eq!(
            StrategyPlan::choose(Distribution::Auto, &local).unwrap(),
            StrategyPlan::OneDevice
        );
        assert_eq!(
            StrategyPlan::choose(Distribution::Mirrored { replicas: 1 }, &local).unwrap(),
            StrategyPlan::OneDevice
        );
        let plan = StrategyPlan::choose(Distribution::Mirrored { replicas: 4 }, &local).unwrap();
        assert_eq!(plan, StrategyPlan::Mirrored { replicas: 4 });
        assert_eq!(plan.num_replicas(), 4);
        assert!(StrategyPlan::choose(Distribution::Mirrored { replicas: 0 }, &local).is_err());
    }

    #[test]
    fn mirrored_on_all_devices_takes_one_replica_per_device_counted() {
        let all = Distribution::MirroredAllDevices;
        assert_eq!(
            all.with_device_count(|| Ok(3)).unwrap(),
            Distribution::Mirrored { replicas: 3 }
        );
        assert_eq!(
            all.with_device_count(|| Ok(0)).unwrap(),
            Distribution::Mirrored { replicas: 1 }
        );
        let not_asked = Distribution::Auto.with_device_count(|| panic!("counted devices"));
        assert_eq!(not_asked.unwrap(), Distribution::Auto);
        let local = ClusterConfig::Local;
        assert!(StrategyPlan::choose(all, &local).is_err());
    }

    #[test]
    fn mirrored_replicas_on_cuda_need_a_device_each_and_on_the_cpu_share_it() {
        assert!(replicas_fit(2, 0, 2).is_ok());
        assert!(replicas_fit(1, 3, 1).is_ok());
        let err = replicas_fit(2, 0, 1).unwrap_err().to_string();
        assert!(err.contains("2 mirrored replicas"), "{err}");
        assert!(err.contains("cuda:0 to cuda:1"), "{err}");
        assert!(err.contains("sees 1 from cuda:0"), "{err}");
        let err = replicas_fit(3, 1, 2).unwrap_err().to_string();
        assert!(err.contains("cuda:1 to cuda:3"), "{err}");
        let four = Distribution::Mirrored { replicas: 4 };
        assert_eq!(four.on_device(DeviceSpec::Cpu).unwrap(), four);
        assert_eq!(
            Distribution::MirroredAllDevices
                .on_device(DeviceSpec::Cpu)
                .unwrap(),
            Distribution::Mirrored { replicas: 1 }
        );
    }

    #[test]
    fn a_cluster_gives_multi_worker_mirrored_with_the_chief_first() {
        let tf_config = r#"{"cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"]},
                            "task": {"type": "worker", "index": 1}, "environment": "cloud"}"#;
        let plan = StrategyPlan::choose(Distribution::Auto, &cluster(tf_config)).unwrap();
        assert_eq!(
            plan,
            StrategyPlan::MultiWorkerMirrored {
                addresses: vec!["c:1".into(), "w0:2".into(), "w1:3".into()],
                names: vec!["chief:0".into(), "worker:0".into(), "worker:1".into()],
                rank: 2,
            }
        );
        assert_eq!(plan.num_replicas(), 3);
    }

    #[test]
    fn ps_tasks_make_a_parameter_server_cluster() {
        let with_ps = r#"{"cluster": {"chief": ["c:1"], "worker": ["w:2"], "ps": ["p:3", "p:4"]},
                          "task": {"type": "worker", "index": 0}}"#;
        let plan = StrategyPlan::choose(Distribution::Auto, &cluster(with_ps)).unwrap();
        assert_eq!(
            plan,
            StrategyPlan::ParameterServer {
                ps_addresses: vec!["p:3".into(), "p:4".into()],
                names: vec!["chief:0".into(), "worker:0".into()],
                rank: 1,
            }
        );
        let ps = r#"{"cluster": {"chief": ["c:1"], "ps": ["p:3"]},
                     "task": {"type": "ps", "index": 0}}"#;
        let err = StrategyPlan::choose(Distribution::Auto, &cluster(ps)).unwrap_err();
        assert!(err.to_string().contains("task.type = ps"), "{err}");
    }

    #[test]
    fn clusters_this_strategy_cannot_train_in_are_named() {
        let evaluator = r#"{"cluster": {"chief": ["c:1"]},
                            "task": {"type": "evaluator", "index": 0}}"#;
        let err = StrategyPlan::choose(Distribution::Auto, &cluster(evaluator)).unwrap_err();
        assert!(err.to_string().contains("task.type = evaluator"), "{err}");
        let chief = r#"{"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 0}}"#;
        let err = StrategyPlan::choose(Distribution::Mirrored { replicas: 2 }, &cluster(chief))
            .unwrap_err();
        assert!(err.to_string().contains("describes a cluster"), "{err}");
    }
}
