//! Which untrained values a training task assigns: what its steps move, a late starter
//! from the next comparison on, never a frozen layer.

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::{AssignedValues, RECHECK_EVERY};
use crate::device::CpuTrainBackend as Train;

#[derive(Module, Debug)]
struct TwoNorms<B: Backend> {
    early: BatchNorm<B>,
    late: BatchNorm<B>,
    frozen: Linear<B>,
}

fn batch(step: u64) -> Tensor<Train, 2> {
    let values = (0..32).map(|i| ((i * 7 + step as usize) % 11) as f32 * 0.3);
    Tensor::from_data(
        TensorData::new(values.collect(), [8, 4]),
        &Default::default(),
    )
}

#[test]
fn what_steps_move_is_assigned_and_a_late_mover_from_the_next_comparison() {
    let device = Default::default();
    let model = TwoNorms::<Train> {
        early: BatchNormConfig::new(4).init(&device),
        late: BatchNormConfig::new(4).init(&device),
        frozen: LinearConfig::new(4, 2).init(&device).no_grad(),
    };
    let late_from = 30;
    let mut assigned = AssignedValues::default();
    let mut sent = Vec::new();
    for step in 0..RECHECK_EVERY + 2 {
        assigned.before_step(&model);
        let _ = model.early.forward(batch(step));
        if step >= late_from {
            let _ = model.late.forward(batch(step));
        }
        let values = assigned.after_step(&model);
        let expected_late = values
            .get("late.running_mean")
            .zip(values.get("late.running_var"))
            .is_some();
        sent.push((step, values.len(), expected_late));
        assert!(
            values.keys().all(|path| !path.starts_with("frozen")),
            "step {step}: {:?}",
            values.keys()
        );
        if let Some(mean) = values.get("early.running_mean") {
            let now = model.early.running_mean.value().into_data();
            assert_eq!(
                mean,
                &now.to_vec::<f32>().unwrap(),
                "this step's, at {step}"
            );
        }
    }
    // Both statistics of `early` every step; `late`'s two once the comparison at step 100
    // sees them move.
    for (step, count, late) in sent {
        let expect_late = step >= RECHECK_EVERY;
        assert_eq!(late, expect_late, "step {step}");
        assert_eq!(count, if expect_late { 4 } else { 2 }, "step {step}");
    }
}
