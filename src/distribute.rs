//! Collective communication for synchronous data-parallel training (TF's
//! MultiWorkerMirroredStrategy, Horovod): a point-to-point [`Transport`] between ranks, ring
//! all-reduce / broadcast / barrier on top of it, and fusion buckets that pack many gradients
//! into a few large buffers.

mod bucket;
mod collective;
mod collective_fault;
mod comm_stats;
mod gradient_sync;
mod host_order;
pub mod ps;
mod replica_seat;
mod step_loss;
mod strategy;
#[cfg(test)]
mod testing;
mod timeline;
mod transport;

pub use bucket::{Bucket, BucketEntry, BucketPlan, DEFAULT_BUCKET_BYTES};
pub use collective::{
    all_gather, all_reduce_mean, all_reduce_mean_with, all_reduce_sum, all_reduce_sum_with,
    barrier, broadcast, broadcast_with, dissemination_rounds, Action, BroadcastChain,
    CollectiveConfig, CollectivePhase, Combine, Compression, RingSchedule, Tag,
    DEFAULT_SEGMENT_BYTES,
};
pub use collective_fault::{AddressFault, CollectiveFault, Result};
pub use comm_stats::CommStats;
pub use gradient_sync::{GradientAverager, LocalStep, PowerSgd};
pub(crate) use host_order::ring_layout_of_cluster;
pub use host_order::ring_order_by_host;
pub use replica_seat::Replica;
pub(crate) use replica_seat::RingLayout;
pub use step_loss::StepLoss;
pub use strategy::{ConnectConfig, Distribution, Strategy, StrategyPlan};
pub(crate) use timeline::Lane;
pub use timeline::{Timeline, TimelineSpec};
pub(crate) use transport::{listen_address, wait_from_secs};
pub use transport::{
    ClusterTls, GrpcConfig, GrpcTransport, InMemoryTransport, Lent, Onward, Renumbered, TlsFault,
    Transport, DEFAULT_RECV_TIMEOUT,
};
