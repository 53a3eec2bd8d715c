//! Clipping on known gradients: global norm, each variable's norm, value.

use burn::nn::{Linear, LinearConfig};
use burn::tensor::TensorData;

use super::*;
use crate::device::CpuTrainBackend as Train;

type InnerB = <Train as AutodiffBackend>::InnerBackend;

/// A 2 → 1 linear layer with gradients weight `[3, 4]` and bias `[12]` (global norm 13).
fn layer_and_grads() -> (Linear<Train>, GradientsParams) {
    let layer = LinearConfig::new(2, 1).init::<Train>(&Default::default());
    let mut grads = GradientsParams::new();
    let device = Default::default();
    let weight =
        Tensor::<InnerB, 2>::from_data(TensorData::new(vec![3.0f32, 4.0], [2, 1]), &device);
    let bias = Tensor::<InnerB, 1>::from_data(TensorData::new(vec![12.0f32], [1]), &device);
    grads.register(layer.weight.id, weight);
    grads.register(layer.bias.as_ref().unwrap().id, bias);
    (layer, grads)
}

fn clipped(clipping: Clipping) -> (Vec<f32>, Vec<f32>) {
    let (layer, grads) = layer_and_grads();
    let grads = clipping.apply(&layer, grads);
    let weight = grads.get::<InnerB, 2>(layer.weight.id).unwrap();
    let bias = grads
        .get::<InnerB, 1>(layer.bias.as_ref().unwrap().id)
        .unwrap();
    (
        weight.into_data().to_vec().unwrap(),
        bias.into_data().to_vec().unwrap(),
    )
}

#[test]
fn the_global_norm_scales_every_gradient_together_only_above_the_bound() {
    assert_eq!(
        clipped(Clipping::by_global_norm(6.5)),
        (vec![1.5, 2.0], vec![6.0])
    );
    assert_eq!(
        clipped(Clipping::by_global_norm(13.0)),
        (vec![3.0, 4.0], vec![12.0])
    );
    assert_eq!(
        clipped(Clipping::by_global_norm(100.0)),
        (vec![3.0, 4.0], vec![12.0])
    );
}

#[test]
fn each_variable_s_norm_and_values_are_bounded_apart() {
    let each = Clipping {
        norm: Some(2.5),
        ..Clipping::default()
    };
    let (weight, bias) = clipped(each);
    assert_eq!(weight, [1.5, 2.0]);
    assert!((bias[0] - 2.5).abs() < 1e-6, "{bias:?}");
    assert_eq!(
        clipped(Clipping::by_value(3.5)),
        (vec![3.0, 3.5], vec![3.5])
    );
    assert_eq!(clipped(Clipping::default()), (vec![3.0, 4.0], vec![12.0]));
}

#[test]
fn bounds_must_be_finite_and_positive() {
    assert!(Clipping::by_value(1.0).validate().is_ok());
    let err = Clipping::by_global_norm(0.0)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("global_norm 0 must be finite and positive"),
        "{err}"
    );
    assert!(Clipping::by_value(f32::NAN).validate().is_err());
}
