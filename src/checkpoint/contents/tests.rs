//! Optimizer state restored against the model's parameters.

use std::path::Path;

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};

use super::*;
use crate::device::CpuTrainBackend as Train;
use crate::optimizer::OptimizerSpec;

type Inner = <Train as AutodiffBackend>::InnerBackend;

#[derive(Module, Debug)]
struct Net<B: Backend> {
    hidden: Linear<B>,
    output: Linear<B>,
}

fn net() -> Net<Train> {
    let device = Default::default();
    Net {
        hidden: LinearConfig::new(3, 4).init(&device),
        output: LinearConfig::new(4, 1).init(&device),
    }
}

/// A checkpoint of `net()` after one step of `spec`: state for every parameter.
fn checkpoint(spec: &OptimizerSpec) -> Checkpoint {
    let device = Default::default();
    let model = net();
    let x = Tensor::<Train, 2>::from_data(TensorData::new(vec![1.0f32; 6], [2, 3]), &device);
    let loss = model.output.forward(model.hidden.forward(x)).sum();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let mut optimizer = Optimizer::<Train>::new(spec);
    let model = optimizer.step(0.1, model, grads);
    assert_eq!(optimizer.state_len(), 4);
    snapshot(&model, &optimizer, 1, None).unwrap()
}

/// The optimizer section of one step of `spec` on a parameter `path` of `shape`.
fn state_of(spec: &OptimizerSpec, path: &str, shape: &[usize]) -> Vec<u8> {
    let mut optimizer = Optimizer::<Train>::new(spec);
    let n = shape.iter().product();
    let tensor = || TensorData::new(vec![1.0f32; n], shape.to_vec());
    let device = Default::default();
    macro_rules! step {
        ($d:literal) => {{
            let t = || Tensor::<Inner, $d>::from_data(tensor(), &device);
            optimizer.step_tensor(0.1, path, t(), t());
        }};
    }
    match shape.len() {
        1 => step!(1),
        2 => step!(2),
        _ => step!(3),
    }
    optimizer.state_bytes().unwrap()
}

#[test]
fn a_state_of_another_rank_or_shape_than_its_parameter_is_refused_naming_both() {
    let file = Path::new("ckpt-1.ckpt");
    let adam = OptimizerSpec::adam(0.1);
    let good = checkpoint(&adam);
    let mut restored = Optimizer::<Train>::new(&adam);
    restore_optimizer(&mut restored, &good, file, &Default::default()).unwrap();
    assert_eq!(restored.state_len(), 4);

    let sgd = OptimizerSpec::sgd(0.1);
    let momentum = OptimizerSpec::sgd_momentum(0.1, 0.9, false);
    let cases = [
        // Rank 1 for a rank-2 weight: Burn's step would panic ("Unsupported state dimension").
        (
            &adam,
            "hidden.weight",
            vec![12],
            "has shape [12], but the parameter has shape [3, 4]",
        ),
        // Same rank, other shape: the update would broadcast it or panic.
        (
            &adam,
            "hidden.bias",
            vec![1],
            "has shape [1], but the parameter has shape [4]",
        ),
        (
            &adam,
            "output.weight",
            vec![4, 1, 1],
            "has shape [4, 1, 1], but the parameter has shape [4, 1]",
        ),
        (
            &momentum,
            "hidden.bias",
            vec![2],
            "has shape [2], but the parameter has shape [4]",
        ),
        // SGD without momentum keeps no tensor: its rank alone is wrong.
        (
            &sgd,
            "output.bias",
            vec![1, 1],
            "is for a parameter of rank 2, but the parameter has shape [1]",
        ),
    ];
    for (spec, path, shape, why) in cases {
        let damaged =
            checkpoint(spec).with_section(OPTIMIZER_SECTION, state_of(spec, path, &shape));
        let mut optimizer = Optimizer::<Train>::new(spec);
        let error = restore_optimizer(&mut optimizer, &damaged, file, &Default::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!("checkpoint ckpt-1.ckpt: the optimizer state of '{path}' {why}")
        );
    }
    // A path that is none of the model's (a ps task's block) is left to its owner.
    let block = good.with_section(
        OPTIMIZER_SECTION,
        state_of(&adam, "hidden.weight/part_0", &[2]),
    );
    let mut optimizer = Optimizer::<Train>::new(&adam);
    restore_optimizer(&mut optimizer, &block, file, &Default::default()).unwrap();
}
