//! Each optimizer, two steps on fixed weights and gradients, against what TF / Keras itself
//! computed (`scripts/fixtures/keras_optimizers.json`, printed by `keras_optimizers.py`;
//! no TensorFlow needed here), through the ps path, which runs the same optimizers as the
//! training tasks.

use serde_json::Value;

use super::*;
use crate::optimizer::{Algorithm, OptimizerSpec};

const FIXTURE: &str = include_str!("../../../../scripts/fixtures/keras_optimizers.json");

/// The largest difference allowed.
const TOLERANCE: f64 = 1e-6;

/// Adam's and AdamW's: Keras computes in f32 throughout, and its bias correction `1 − β2ᵗ` loses about
/// 1e-4 of its relative precision there at t = 2, which moves its step-2 weights by ~1.7e-6
/// from the exact value ours follows (f64 scalars; the formula in f64 agrees with ours
/// within 1e-6).
const ADAMW_TOLERANCE: f64 = 2e-6;

fn check(name: &str, spec: OptimizerSpec) {
    check_within(name, spec, TOLERANCE);
}

fn check_within(name: &str, spec: OptimizerSpec, tolerance: f64) {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let floats = |v: &Value| -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    let mut values = floats(&fixture["weights"]);
    let lr = fixture["learning_rate"].as_f64().unwrap();
    let mut optimizer = VariableOptimizer::new(&spec);
    let steps = fixture["steps"][name].as_array().unwrap();
    for (grad, want) in fixture["gradients"].as_array().unwrap().iter().zip(steps) {
        optimizer
            .apply(lr, "w", &[4], &mut values, floats(grad))
            .unwrap();
        for (got, want) in values.iter().zip(floats(want)) {
            assert!(
                (*got as f64 - want as f64).abs() < tolerance,
                "{name}: {values:?} != {want:?}"
            );
        }
    }
}

#[test]
fn rmsprop_plain_and_centered_with_momentum() {
    check("rmsprop", OptimizerSpec::rmsprop(0.1));
    let centered = Algorithm::Rmsprop {
        rho: 0.9,
        momentum: 0.5,
        epsilon: 1e-7,
        centered: true,
    };
    let centered = OptimizerSpec::new(centered, 0.1);
    check("rmsprop_centered_momentum", centered);
}

#[test]
fn adam_puts_epsilon_where_tf_does() {
    check_within("adam", OptimizerSpec::adam(0.1), ADAMW_TOLERANCE);
}

#[test]
fn adamw_decays_the_weights_apart_from_the_gradient() {
    check_within("adamw", OptimizerSpec::adamw(0.1), ADAMW_TOLERANCE);
}

#[test]
fn adagrad_starts_its_accumulator_at_tf_s_value() {
    check("adagrad", OptimizerSpec::adagrad(0.1));
}

#[test]
fn sgd_momentum_and_nesterov_without_dampening() {
    check("sgd_momentum", OptimizerSpec::sgd_momentum(0.1, 0.9, false));
    check("sgd_nesterov", OptimizerSpec::sgd_momentum(0.1, 0.9, true));
}

fn ftrl(l2_shrinkage: f64, beta: f64) -> OptimizerSpec {
    let ftrl = Algorithm::Ftrl {
        learning_rate_power: -0.5,
        initial_accumulator_value: 0.1,
        l1: 0.01,
        l2: 0.02,
        l2_shrinkage,
        beta,
    };
    OptimizerSpec::new(ftrl, 0.1)
}

#[test]
fn ftrl_with_l1_l2_shrinkage_and_beta() {
    check("ftrl", ftrl(0.0, 0.0));
    check("ftrl_shrinkage_beta", ftrl(0.05, 0.1));
}
