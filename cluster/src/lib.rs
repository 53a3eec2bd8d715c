//! Cluster membership from TF_CONFIG, parsed by a pure function into typed values, or from
//! the variables torchrun, mpirun or srun set and a rendezvous at rank 0; the cluster's
//! shared token, its TLS files (and certificates to put in them), this machine's host name,
//! the threads per CPU operation it is given (`OMP_NUM_THREADS`), and the variables of other
//! programs it honours (`RUST_LOG`, `CUDA_VISIBLE_DEVICES`, `MNIST_DIR`); the only code of
//! the training framework that reads the environment.
//!
//! A crate of its own, without Burn, so that tools which only need to read or write
//! TF_CONFIG (the `estimator-launch` launcher) build in about a minute; the `estimator` crate
//! re-exports it as `estimator::cluster`.

mod certificates;
mod credential_variables;
mod env;
mod error;
mod hostlist;
mod launched;
mod process_settings;
mod rendezvous;
mod spec;
mod task;
mod tf_config;
mod threads;
mod tls;

pub use certificates::{issue_certificates, write_certificates, IssuedCertificate};
pub use credential_variables::{
    CLUSTER_TOKEN, CLUSTER_TOKEN_FILE, TLS_CA, TLS_CERT, TLS_KEY, TLS_SERVER_NAME,
};
pub use env::{
    busy_poll_from_env, cluster_from_env, cluster_source_from_env, cluster_token_from_env,
    hierarchical_allreduce_from_env, host_id, hostname, parse_busy_poll, ring_by_host_from_env,
    same_host_lane_from_env, same_host_lane_wanted, shared_memory_from_env, ClusterSource,
    BUSY_POLL_US, DEFAULT_RENDEZVOUS_TIMEOUT_SECS, HIERARCHICAL_ALLREDUCE, HOST_ID,
    RENDEZVOUS_TIMEOUT_SECS, RING_BY_HOST, SAME_HOST_LANE, SHARED_MEMORY, TF_CONFIG,
};
pub use error::Error;
pub use launched::{
    launched_rank, LaunchedRank, Launcher, RendezvousAddress, DEFAULT_RENDEZVOUS_PORT,
    RENDEZVOUS_PORT,
};
pub use process_settings::{
    cuda_visible_devices_from_env, glibc_tunables_from_env, log_filter_from_env,
    mnist_dirs_from_env, CUDA_VISIBLE_DEVICES, GLIBC_TUNABLES, MNIST_DIR, RUST_LOG,
};
pub use spec::ClusterSpec;
pub use task::{Task, TaskType};
pub use tf_config::ClusterConfig;
pub use threads::{
    omp_num_threads_from_env, omp_num_threads_text_from_env, parse_omp_num_threads, OMP_NUM_THREADS,
};
pub use tls::{tls_files_from_env, TlsFiles};
