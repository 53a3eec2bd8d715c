//! What crosses the wire each step: frozen values once, running statistics as they move.

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::super::super::{Ready, StepSync, Synced};
use super::{chief, config, start};
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{Command, PsClient};
use crate::distribute::{LocalStep, StepLoss};
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::run_loop::train_state::TrainState;

#[derive(Module, Debug)]
struct Normed<B: Backend> {
    norm: BatchNorm<B>,
    frozen: Linear<B>,
    out: Linear<B>,
}

#[test]
fn frozen_values_cross_to_the_ps_tasks_once_and_running_statistics_as_they_move() {
    let ps = start(1);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let device = Default::default();
    let built = Normed {
        norm: BatchNormConfig::new(4).init(&device),
        frozen: LinearConfig::new(4, 2).init(&device).no_grad(),
        out: LinearConfig::new(4, 2).init(&device),
    };
    let frozen = built.frozen.weight.val().into_data();
    let start = TrainState {
        model: built,
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.1)),
        sync_replicas: 1,
        global_step: 0,
        device,
        loss_scale: None,
    };
    let (mut state, _) = StepSync::<B, Normed<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    let counters = || ps.client(0, config()).control(Command::Heartbeat).unwrap()[0];
    let mut bytes = Vec::new();
    for step in 0..4 {
        let before = counters();
        let go;
        (state, go) = sync.ready(state, true).unwrap();
        assert!(matches!(go, Ready::Compute { .. }));
        let x = Tensor::<B, 2>::from_data(
            TensorData::new(
                (0..32).map(|i| ((i * 7 + step) % 11) as f32).collect(),
                [8, 4],
            ),
            &device,
        );
        let model = &state.model;
        let y = model.out.forward(model.norm.forward(x.clone())) + model.frozen.forward(x);
        let grads = GradientsParams::from_grads(y.sum().backward(), model);
        let moved = state.model.norm.running_mean.value_sync().into_data();
        let local = LocalStep {
            grads,
            loss: StepLoss::Known(0.0),
        };
        let synced;
        (state, synced) = sync.exchange(state, Some(local)).unwrap();
        assert!(matches!(synced, Synced::Applied { .. }));
        let after = counters();
        bytes.push((
            after.bytes_served - before.bytes_served,
            after.bytes_received - before.bytes_received,
        ));
        let on_ps = ps
            .client(0, config())
            .snapshot()
            .unwrap()
            .remove(0)
            .variables;
        let on_ps = |path: &str| TensorData::new(on_ps[path].1.clone(), on_ps[path].0.clone());
        assert_eq!(
            on_ps("norm.running_mean"),
            moved,
            "this step's, at step {step}"
        );
        assert_eq!(on_ps("frozen.weight"), frozen);
    }
    // Values of 4 (gamma, beta, running mean and variance), 8 + 2 trained (`out`), 8 + 2
    // frozen, 4 bytes each. The first pull brings all 36 (144 bytes); every push sends the
    // 18 trained values' gradients and the 8 running statistics, and its answer brings back
    // those 26 values (104 bytes), the next step's pull.
    assert_eq!(
        bytes,
        [(144 + 104, 104), (104, 104), (104, 104), (104, 104)]
    );
    assert_eq!(state.model.frozen.weight.val().into_data(), frozen);
}
