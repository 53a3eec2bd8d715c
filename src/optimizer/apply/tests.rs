use burn::tensor::{Tensor, TensorData};

use super::*;
use crate::device::CpuTrainBackend as Train;

type Inner = <Train as AutodiffBackend>::InnerBackend;

/// The value of a one-element parameter at `path` after one update from 1 with gradient 1.
fn updated(optimizer: &mut Optimizer<Train>, lr: f64, path: &str) -> f32 {
    let device = Default::default();
    let one = || Tensor::<Inner, 1>::from_data(TensorData::from([1.0f32]), &device);
    let updated = optimizer.step_tensor(lr, path, one(), one());
    updated.into_data().to_vec::<f32>().unwrap()[0]
}

#[test]
fn the_part_s_rule_updates_only_the_parameters_under_its_module() {
    let spec = OptimizerSpec::sgd(0.1).with_part("linear", OptimizerSpec::sgd(0.5));
    let mut optimizer = Optimizer::<Train>::new(&spec);
    assert!((updated(&mut optimizer, 0.1, "linear.weights") - 0.5).abs() < 1e-7);
    assert!((updated(&mut optimizer, 0.1, "linear") - 0.5).abs() < 1e-7);
    // A sibling whose name starts the same is not inside the module.
    assert!((updated(&mut optimizer, 0.1, "linear_2.weights") - 0.9).abs() < 1e-7);
    assert!((updated(&mut optimizer, 0.1, "dnn.hidden.0.weight") - 0.9).abs() < 1e-7);
    // A block of a parameter (a ps holding it in blocks) is inside the parameter.
    assert!((updated(&mut optimizer, 0.1, "linear.weights/part_1") - 0.5).abs() < 1e-7);
    let one = OptimizerSpec::sgd(0.1).with_part("linear.weights", OptimizerSpec::sgd(0.5));
    let mut optimizer = Optimizer::<Train>::new(&one);
    assert!((updated(&mut optimizer, 0.1, "linear.weights/part_0") - 0.5).abs() < 1e-7);
    assert!((updated(&mut optimizer, 0.1, "linear.weights_2/part_0") - 0.9).abs() < 1e-7);
}

#[test]
fn the_schedule_scales_the_part_s_rate_as_the_main_one() {
    let spec = OptimizerSpec::sgd(0.1).with_part("linear", OptimizerSpec::sgd(0.5));
    let mut optimizer = Optimizer::<Train>::new(&spec);
    // The schedule halved the main rate (0.1 → 0.05): the part's goes 0.5 → 0.25.
    assert!((updated(&mut optimizer, 0.05, "linear.bias") - 0.75).abs() < 1e-7);
    assert!((updated(&mut optimizer, 0.05, "dnn.bias") - 0.95).abs() < 1e-7);
}

#[test]
fn each_part_keeps_its_own_rule_s_state_through_a_checkpoint() {
    let spec = OptimizerSpec::adagrad(0.1).with_part("linear", OptimizerSpec::ftrl(0.2));
    let mut first = Optimizer::<Train>::new(&spec);
    let mut second = Optimizer::<Train>::new(&spec);
    for path in ["linear.weights", "dnn.weight"] {
        updated(&mut first, 0.1, path);
    }
    second
        .load_state_bytes(&first.state_bytes().unwrap(), &Default::default())
        .unwrap();
    assert_eq!(second.state_len(), 2);
    for path in ["linear.weights", "dnn.weight"] {
        assert_eq!(
            updated(&mut first, 0.1, path),
            updated(&mut second, 0.1, path)
        );
    }
}

#[test]
fn a_part_naming_no_module_of_the_model_is_an_error() {
    use burn::nn::{Linear, LinearConfig};
    let model: Linear<Train> = LinearConfig::new(2, 1).init(&Default::default());
    let spec = OptimizerSpec::sgd(0.1).with_part("weight", OptimizerSpec::sgd(0.5));
    assert!(Optimizer::<Train>::new(&spec).check_part(&model).is_ok());
    let spec = OptimizerSpec::sgd(0.1).with_part("linear", OptimizerSpec::sgd(0.5));
    let err = Optimizer::<Train>::new(&spec)
        .check_part(&model)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid configuration: optimizer part: module 'linear' holds no parameter of the model"
    );
}
