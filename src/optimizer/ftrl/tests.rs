//! FTRL against TF's kernel formula (`scripts/fixtures/ftrl_reference.py` printed these).

use burn::tensor::TensorData;

use super::*;
use crate::device::CpuBackend;

const WEIGHTS: [f32; 4] = [1.0, -2.0, 0.5, 0.001];
const GRADIENTS: [[f32; 4]; 2] = [[0.1, -0.3, 0.0, 0.0], [0.2, 0.1, -0.5, 0.0]];

fn two_steps(ftrl: &Ftrl) -> Vec<Vec<f32>> {
    let device = Default::default();
    let tensor =
        |v: &[f32]| Tensor::<CpuBackend, 1>::from_data(TensorData::new(v.to_vec(), [4]), &device);
    let mut w = tensor(&WEIGHTS);
    let mut state = None;
    let mut steps = Vec::new();
    for g in GRADIENTS {
        let (next, next_state) = ftrl.step(0.1, w, tensor(&g), state);
        steps.push(next.clone().into_data().to_vec::<f32>().unwrap());
        (w, state) = (next, next_state);
    }
    steps
}

fn assert_close(got: &[Vec<f32>], want: [[f64; 4]; 2]) {
    for (g, w) in got.iter().zip(want) {
        for (a, b) in g.iter().zip(w) {
            assert!((*a as f64 - b).abs() < 1e-6, "{got:?} != {want:?}");
        }
    }
}

fn tf_defaults() -> Ftrl {
    Ftrl {
        learning_rate_power: -0.5,
        initial_accumulator_value: 0.1,
        l1: 0.01,
        l2: 0.02,
        l2_shrinkage: 0.0,
        beta: 0.0,
    }
}

#[test]
fn two_steps_match_tf_with_l1_and_l2() {
    assert_close(
        &two_steps(&tf_defaults()),
        [
            [0.013211822278868813, -0.4735827291062491, 0.0, 0.0],
            [
                -0.032788884617689154,
                -0.4957451818774687,
                0.08226887782638098,
                0.0,
            ],
        ],
    );
}

#[test]
fn two_steps_match_tf_with_shrinkage_and_beta() {
    let ftrl = Ftrl {
        l2_shrinkage: 0.05,
        beta: 0.1,
        ..tf_defaults()
    };
    assert_close(
        &two_steps(&ftrl),
        [
            [
                -0.008183598893323728,
                -0.3488197475890391,
                -0.009518647560855667,
                0.0,
            ],
            [
                -0.04872549087112295,
                -0.3606333214509162,
                0.05962257562128765,
                0.0,
            ],
        ],
    );
}
