//! Variables cut into blocks that the ps tasks hold apart: trained and checkpointed as the
//! whole variable, and a block that alone changed taken into the values held.

use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};

use super::super::super::{Ready, StepSync, Synced};
use super::super::PsSync;
use super::{config, names, start, state, State};
use crate::checkpoint::CheckpointManager;
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{
    InMemoryPs, MinSizePartitioner, PsClient, PsMode, PsReplica, PushAnswer, VariableOptimizer,
};
use crate::distribute::{LocalStep, StepLoss};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::run_loop::train_state::TrainState;
use crate::state::parameter_values;

/// `model`, a 6 → 3 layer, trained with Adam through 2 in-memory ps tasks, its weight (72
/// bytes) cut into blocks of 16 bytes or more when `partitioner` says: the ps tasks after 3
/// steps, and the chief's state gathered from them.
fn adam_through_two_ps(
    model: Linear<B>,
    partitioner: Option<MinSizePartitioner>,
) -> (InMemoryPs, State) {
    let spec = OptimizerSpec::adam(0.05);
    let ps = InMemoryPs::start(2, || VariableOptimizer::new(&spec), "chief:0");
    let dir = tempfile::tempdir().unwrap();
    let replica = PsReplica::in_memory(&ps, 0, vec!["chief:0".to_string()], config());
    let manager = CheckpointManager::new(dir.path(), None);
    let mut sync = PsSync::new(replica, PsMode::default(), partitioner, manager);
    let device = Default::default();
    let start = TrainState {
        model,
        optimizer: Optimizer::new(&spec),
        sync_replicas: 1,
        global_step: 0,
        device,
        loss_scale: None,
    };
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    for step in 0..3 {
        let go;
        (state, go) = sync.ready(state, true).unwrap();
        assert!(matches!(go, Ready::Compute { .. }));
        let x: Vec<f32> = (0..12).map(|i| ((i * 5 + step) % 7) as f32 - 3.0).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(x, [2, 6]), &device);
        let loss = state.model.forward(x).powi_scalar(2).sum();
        let local = LocalStep {
            grads: GradientsParams::from_grads(loss.backward(), &state.model),
            loss: StepLoss::Known(0.0),
        };
        let synced;
        (state, synced) = sync.exchange(state, Some(local)).unwrap();
        assert!(matches!(synced, Synced::Applied { .. }));
    }
    let (state, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, state, None).unwrap();
    assert_eq!(checkpoint.global_step, 3);
    (ps, state)
}

#[test]
fn a_weight_cut_into_blocks_on_two_ps_tasks_trains_and_checkpoints_as_the_whole() {
    let blocks = MinSizePartitioner::new(16);
    let model: Linear<B> = LinearConfig::new(6, 3).init(&Default::default());
    // Burn initialises parameters when first read: once, before the two runs share them.
    let built = parameter_values(&model);
    let (cut_ps, cut) = adam_through_two_ps(model.clone(), Some(blocks));
    let (whole_ps, whole) = adam_through_two_ps(model, None);
    let held = |ps: &InMemoryPs| -> Vec<Vec<String>> {
        let snapshots = ps.client(0, config()).snapshot().unwrap();
        snapshots
            .into_iter()
            .map(|s| s.variables.into_keys().collect())
            .collect()
    };
    // Each ps holds a block of the weight; the bias (12 bytes) stays whole.
    assert_eq!(
        held(&cut_ps),
        [vec!["bias", "weight/part_0"], vec!["weight/part_1"]]
    );
    assert_eq!(held(&whole_ps), [vec!["weight"], vec!["bias"]]);
    assert_ne!(parameter_values(&cut.model), built, "trained");
    // Adam's update is elementwise: the same values and, gathered, the same state bytes.
    assert_eq!(parameter_values(&cut.model), parameter_values(&whole.model));
    assert_eq!(
        cut.optimizer.state_bytes().unwrap(),
        whole.optimizer.state_bytes().unwrap()
    );
}

#[test]
fn a_block_that_alone_changed_goes_into_the_values_the_task_holds() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let replica = PsReplica::in_memory(&ps, 0, names(), config());
    let blocks = Some(MinSizePartitioner::new(4));
    let manager = CheckpointManager::new(dir.path(), None);
    let mut chief = PsSync::new(replica, PsMode::default(), blocks, manager);
    // A 3 → 1 layer: its weight is 3 rows of one value, cut into 2 blocks of 2 and 1 rows.
    let (_, _) = StepSync::<B, Linear<B>>::prepare(&mut chief, state(0), &|_| 100).unwrap();
    let replica = PsReplica::in_memory(&ps, 1, names(), config());
    let manager = CheckpointManager::new(dir.path(), None);
    let mut worker = PsSync::new(replica, PsMode::default(), blocks, manager);
    let (held, _) = worker.ready(state(0), true).unwrap();
    let before = parameter_values(&held.model)["weight"].1.clone();
    // Only the second block moves: its ps answers the next pull with it alone.
    let pushed = worker
        .session
        .push(Vec::new(), vec![("weight/part_1".to_string(), vec![1.0])])
        .unwrap();
    assert_eq!(pushed, PushAnswer::Applied(1));
    let (held, _) = worker.ready(held, true).unwrap();
    let after = parameter_values(&held.model)["weight"].1.clone();
    assert_eq!(after[..2], before[..2], "the first block as it was held");
    assert!((after[2] - (before[2] - 0.1)).abs() < 1e-6, "{after:?}");
}
