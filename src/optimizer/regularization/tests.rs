//! The penalty's gradient on known weights and gradients; biases untouched.

use burn::module::Param;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::TensorData;

use super::*;
use crate::device::CpuTrainBackend as Train;

type InnerB = <Train as AutodiffBackend>::InnerBackend;

/// A 2 → 1 layer with weights `[0.5, -2]`, bias `[1]`, gradients `[3, 4]` and `[12]`.
fn layer_and_grads() -> (Linear<Train>, GradientsParams) {
    let device = Default::default();
    let mut layer = LinearConfig::new(2, 1).init::<Train>(&device);
    layer.weight = Param::from_tensor(Tensor::from_data(
        TensorData::new(vec![0.5f32, -2.0], [2, 1]),
        &device,
    ));
    let mut grads = GradientsParams::new();
    let weight =
        Tensor::<InnerB, 2>::from_data(TensorData::new(vec![3.0f32, 4.0], [2, 1]), &device);
    let bias = Tensor::<InnerB, 1>::from_data(TensorData::new(vec![12.0f32], [1]), &device);
    grads.register(layer.weight.id, weight);
    grads.register(layer.bias.as_ref().unwrap().id, bias);
    (layer, grads)
}

#[test]
fn kernels_get_the_penalty_gradient_and_biases_do_not() {
    let (layer, grads) = layer_and_grads();
    let grads = Regularization { l1: 0.1, l2: 0.25 }.apply(&layer, grads);
    let weight: Vec<f32> = grads
        .get::<InnerB, 2>(layer.weight.id)
        .unwrap()
        .into_data()
        .to_vec()
        .unwrap();
    // 3 + 0.1·1 + 2·0.25·0.5; 4 + 0.1·(−1) + 2·0.25·(−2).
    assert_eq!(weight, [3.35, 2.9]);
    let bias: Vec<f32> = grads
        .get::<InnerB, 1>(layer.bias.as_ref().unwrap().id)
        .unwrap()
        .into_data()
        .to_vec()
        .unwrap();
    assert_eq!(bias, [12.0]);
    let err = Regularization { l1: -1.0, l2: 0.0 }.validate().unwrap_err();
    assert!(
        err.to_string().contains("l1 -1 must be finite and >= 0"),
        "{err}"
    );
}
