//! The run loop's ps driver against in-memory ps tasks: the chief realigning ps tasks whose
//! steps parted, re-initialising a restarted ps while a worker waits for it, checkpointing
//! at the step other workers moved the ps tasks to, what crosses the wire each step, and
//! variables cut into blocks that the ps tasks hold apart.

mod blocks;
mod checkpoints;
mod realign;
mod wire;

use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use super::PsSync;
use crate::checkpoint::CheckpointManager;
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{
    InMemoryPs, PsClient, PsClientConfig, PsMode, PsReplica, VariableOptimizer,
};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::run_loop::train_state::TrainState;

fn config() -> PsClientConfig {
    PsClientConfig::for_tests()
}

fn start(num_ps: usize) -> InMemoryPs {
    InMemoryPs::start(num_ps, sgd, "chief:0")
}

fn sgd() -> VariableOptimizer {
    VariableOptimizer::new(&OptimizerSpec::sgd(0.1))
}

fn names() -> Vec<String> {
    vec!["chief:0".to_string(), "worker:0".to_string()]
}

/// The chief's driver through `client`, checkpointing into `dir`.
fn chief(client: impl PsClient + 'static, dir: &std::path::Path) -> PsSync {
    let replica = PsReplica::new(Box::new(client), 0, names());
    PsSync::new(
        replica,
        PsMode::default(),
        None,
        CheckpointManager::new(dir, None),
    )
}

fn steps(ps: &InMemoryPs) -> Vec<u64> {
    let snapshots = ps.client(0, config()).snapshot().unwrap();
    snapshots.iter().map(|s| s.step).collect()
}

type State = TrainState<B, Linear<B>>;

fn state(global_step: u64) -> State {
    let device = Default::default();
    TrainState {
        model: LinearConfig::new(3, 1).init(&device),
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.1)),
        sync_replicas: 1,
        global_step,
        device,
        loss_scale: None,
    }
}

fn gradients(model: &Linear<B>) -> GradientsParams {
    let device = Default::default();
    let x = Tensor::<B, 2>::ones([2, 3], &device);
    let loss = model.forward(x).sum();
    GradientsParams::from_grads(loss.backward(), model)
}
