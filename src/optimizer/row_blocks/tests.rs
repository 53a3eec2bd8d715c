use burn::tensor::TensorData;

use super::super::{Algorithm, Optimizer, OptimizerSpec};
use crate::device::CpuTrainBackend as Train;

type Inner = <Train as burn::tensor::backend::AutodiffBackend>::InnerBackend;

const ROWS: [usize; 3] = [2, 2, 1];

fn blocks() -> Vec<(String, usize)> {
    ROWS.iter()
        .enumerate()
        .map(|(i, &rows)| (format!("w/part_{i}"), rows))
        .collect()
}

fn tensor(values: &[f32], rows: usize) -> burn::tensor::Tensor<Inner, 2> {
    let data = TensorData::new(values.to_vec(), [rows, 3]);
    burn::tensor::Tensor::from_data(data, &Default::default())
}

fn values(tensor: burn::tensor::Tensor<Inner, 2>) -> Vec<f32> {
    tensor.into_data().to_vec::<f32>().unwrap()
}

/// A gradient for step `step`, different in every element and every step.
fn gradient(step: usize) -> Vec<f32> {
    (0..15)
        .map(|i| ((i * 7 + step * 3) % 11) as f32 / 5.0 - 1.0)
        .collect()
}

/// Two updates of the whole 5 × 3 `w`, then the state cut into blocks of 2, 2 and 1 rows
/// for another optimizer that updates the blocks apart twice more, then joins them: the
/// values and the joined state are those of four updates of the whole.
fn blocks_update_as_the_whole(spec: OptimizerSpec) {
    let mut whole = Optimizer::<Train>::new(&spec);
    let mut w: Vec<f32> = (0..15).map(|v| v as f32 / 10.0).collect();
    for step in 0..2 {
        w = values(whole.step_tensor(0.1, "w", tensor(&w, 5), tensor(&gradient(step), 5)));
    }
    let cut = whole
        .state_bytes_in_blocks(|_| true, |path| (path == "w").then(blocks))
        .unwrap();
    let mut apart = Optimizer::<Train>::new(&spec);
    apart.load_state_bytes(&cut, &Default::default()).unwrap();
    assert_eq!(apart.state_len(), 3, "{spec:?}: one state per block");
    let mut w_apart = w.clone();
    for step in 2..4 {
        w = values(whole.step_tensor(0.1, "w", tensor(&w, 5), tensor(&gradient(step), 5)));
        let mut offset = 0;
        for (name, rows) in blocks() {
            let range = offset * 3..(offset + rows) * 3;
            let block = tensor(&w_apart[range.clone()], rows);
            let grad = tensor(&gradient(step)[range.clone()], rows);
            let updated = values(apart.step_tensor(0.1, &name, block, grad));
            w_apart[range].copy_from_slice(&updated);
            offset += rows;
        }
    }
    for (a, b) in w.iter().zip(&w_apart) {
        assert!((a - b).abs() <= 1e-6, "{spec:?}: {w:?} against {w_apart:?}");
    }
    let names: Vec<String> = blocks().into_iter().map(|(name, _)| name).collect();
    apart.join_blocks("w", &names).unwrap();
    assert_eq!(apart.state_len(), 1, "{spec:?}: the blocks' states joined");
    let mut next_whole = Optimizer::<Train>::new(&spec);
    next_whole
        .load_state_bytes(&whole.state_bytes().unwrap(), &Default::default())
        .unwrap();
    // The joined state updates as the whole one does.
    let grad = gradient(4);
    let a = values(next_whole.step_tensor(0.1, "w", tensor(&w, 5), tensor(&grad, 5)));
    let b = values(apart.step_tensor(0.1, "w", tensor(&w, 5), tensor(&grad, 5)));
    for (a, b) in a.iter().zip(&b) {
        assert!(
            (a - b).abs() <= 1e-6,
            "{spec:?}: joined state stepped differently"
        );
    }
}

#[test]
fn every_rule_updates_blocks_of_rows_apart_as_it_updates_the_whole() {
    let centered = OptimizerSpec::new(
        Algorithm::Rmsprop {
            rho: 0.9,
            momentum: 0.5,
            epsilon: 1e-7,
            centered: true,
        },
        0.1,
    );
    for spec in [
        OptimizerSpec::sgd_momentum(0.1, 0.9, false),
        OptimizerSpec::adam(0.1),
        OptimizerSpec::adamw(0.1),
        OptimizerSpec::adagrad(0.1),
        OptimizerSpec::rmsprop(0.1),
        centered,
        OptimizerSpec::ftrl(0.1),
    ] {
        blocks_update_as_the_whole(spec);
    }
}

#[test]
fn state_of_only_some_blocks_is_an_error_naming_the_parameter() {
    let spec = OptimizerSpec::adagrad(0.1);
    let mut optimizer = Optimizer::<Train>::new(&spec);
    optimizer.step_tensor(0.1, "w/part_0", tensor(&[1.0; 6], 2), tensor(&[1.0; 6], 2));
    let names = ["w/part_0".to_string(), "w/part_1".to_string()];
    let error = optimizer.join_blocks("w", &names).unwrap_err();
    assert!(
        error.to_string().contains("'w' came for 1 of its 2 blocks"),
        "{error}"
    );
    // No block with state yet (plain SGD keeps none): nothing to join.
    let mut sgd = Optimizer::<Train>::new(&OptimizerSpec::sgd(0.1));
    sgd.join_blocks("w", &names).unwrap();
    assert_eq!(sgd.state_len(), 0);
}
