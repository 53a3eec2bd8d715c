//! Each optimizer, two steps on fixed weights and gradients, against the update rules of
//! TF's optimizers written out in float64 (`scripts/fixtures/optimizer_reference.py` and
//! `ftrl_reference.py` printed these numbers); the same optimizers run on training tasks.

use super::*;
use crate::optimizer::OptimizerSpec;

const WEIGHTS: [f32; 4] = [1.0, -2.0, 0.5, 0.001];
const GRADIENTS: [[f32; 4]; 2] = [[0.1, -0.3, 0.0, 0.0], [0.2, 0.1, -0.5, 0.0]];

fn assert_two_steps(spec: OptimizerSpec, want: [[f64; 4]; 2]) {
    let mut optimizer = variable_optimizer(&spec);
    let mut values = WEIGHTS.to_vec();
    for (grad, want) in GRADIENTS.iter().zip(want) {
        optimizer
            .apply(0.1, "w", &[4], &mut values, grad.to_vec())
            .unwrap();
        for (got, want) in values.iter().zip(want) {
            assert!(
                (*got as f64 - want).abs() < 1e-6,
                "{spec:?}: {values:?} != {want:?}"
            );
        }
    }
}

#[test]
fn rmsprop_plain_and_centered_with_momentum() {
    assert_two_steps(
        OptimizerSpec::rmsprop(0.1),
        [
            [0.6837880441857076, -1.6837739907894442, 0.5, 0.001],
            [
                0.3980766738786934,
                -1.7886018984857037,
                0.8162271335632034,
                0.001,
            ],
        ],
    );
    let centered = OptimizerSpec::Rmsprop {
        learning_rate: 0.1,
        rho: 0.9,
        momentum: 0.5,
        epsilon: 1e-7,
        centered: true,
        schedule: Default::default(),
        clipping: Default::default(),
        regularization: Default::default(),
    };
    assert_two_steps(
        centered,
        [
            [0.6666851836421182, -1.6666687242607836, 0.5, 0.001],
            [
                0.18611056946857496,
                -1.6065362771964522,
                0.8333325925950618,
                0.001,
            ],
        ],
    );
}

#[test]
fn adamw_decays_the_weights_apart_from_the_gradient() {
    assert_two_steps(
        OptimizerSpec::adamw(0.1),
        [
            [0.8996031621776635, -1.8992010540814426, 0.4998, 0.0009996],
            [
                0.8027264834213372,
                -1.8584199168591538,
                0.5740132917262241,
                0.00099920016,
            ],
        ],
    );
}

#[test]
fn adagrad_starts_its_accumulator_at_tf_s_value() {
    assert_two_steps(
        OptimizerSpec::adagrad(0.1),
        [
            [0.9698488792472754, -1.9311752979505927, 0.5, 0.001],
            [
                0.9182091185110939,
                -1.9535359721354228,
                0.5845154133992221,
                0.001,
            ],
        ],
    );
}

#[test]
fn sgd_momentum_and_nesterov_without_dampening() {
    assert_two_steps(
        OptimizerSpec::sgd_momentum(0.1, 0.9, false),
        [[0.99, -1.97, 0.5, 0.001], [0.961, -1.953, 0.55, 0.001]],
    );
    assert_two_steps(
        OptimizerSpec::sgd_momentum(0.1, 0.9, true),
        [[0.981, -1.943, 0.5, 0.001], [0.9349, -1.9377, 0.595, 0.001]],
    );
}

#[test]
fn ftrl_with_l1_and_l2() {
    let ftrl = OptimizerSpec::Ftrl {
        learning_rate: 0.1,
        learning_rate_power: -0.5,
        initial_accumulator_value: 0.1,
        l1: 0.01,
        l2: 0.02,
        l2_shrinkage: 0.0,
        beta: 0.0,
        schedule: Default::default(),
        clipping: Default::default(),
        regularization: Default::default(),
    };
    assert_two_steps(
        ftrl,
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
