//! The strategy a run trains with: chosen from the run configuration and the cluster,
//! then connected to the peers.

use crate::cluster::{cluster_token_from_env, ClusterConfig};
use crate::distribute::{wait_from_secs, ClusterTls, ConnectConfig, Strategy, StrategyPlan};
use crate::error::Result;
use crate::estimator::RunConfig;

/// The strategy `config` asks for in `cluster`, connected (in a cluster this waits up to
/// `config.startup_timeout_secs` for every peer).
pub(crate) fn strategy_for(config: &RunConfig, cluster: &ClusterConfig) -> Result<Strategy> {
    let distribution = config.train_distribute.on_device(config.device)?;
    let plan = StrategyPlan::choose(distribution, cluster)?;
    let (token, tls) = match plan {
        StrategyPlan::OneDevice | StrategyPlan::Mirrored { .. } => (None, None),
        _ => (cluster_token_from_env()?, ClusterTls::from_env()?),
    };
    let connect = ConnectConfig {
        peer_timeout: wait_from_secs(config.peer_timeout_secs),
        startup_timeout: wait_from_secs(config.startup_timeout_secs),
        stall_warning: wait_from_secs(config.stall_warning_secs),
        token,
        tls,
    };
    Strategy::connect(plan, &connect)
}
