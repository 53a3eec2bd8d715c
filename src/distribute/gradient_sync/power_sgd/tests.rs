//! PowerSGD through the averager, on three ranks in one process.
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

use crate::device::CpuTrainBackend as B;
use crate::distribute::testing::on_threads;
use crate::distribute::{CommStats, GradientAverager, InMemoryTransport, LocalStep, PowerSgd};
use crate::distribute::{StepLoss, Transport};
use crate::optimizer::extract_gradients;

/// An 8 × 6 weight: rank 1 sends 8 + 6 values for its 48, rank 2 sends 28.
fn model() -> Linear<B> {
    crate::seed::build_seeded::<B, _>(&Default::default(), 5, || {
        LinearConfig::new(8, 6).init(&Default::default())
    })
}

/// Rank `rank`'s gradients: of the mean squared output over rows of its own.
fn grads(model: &Linear<B>, rank: usize) -> GradientsParams {
    let values: Vec<f32> = (0..4 * 8)
        .map(|i| ((((i + rank * 31) * 7919) % 23) as f32 - 11.0) / 7.0)
        .collect();
    let x = Tensor::<B, 2>::from_data(TensorData::new(values, [4, 8]), &Default::default());
    let y = model.forward(x);
    extract_gradients(model, &mut (y.clone() * y).mean().backward())
}

fn weight(model: &Linear<B>, grads: &GradientsParams) -> Vec<f32> {
    let g = grads.get::<<B as AutodiffBackend>::InnerBackend, 2>(model.weight.id);
    g.unwrap().into_data().to_vec::<f32>().unwrap()
}

fn bias(model: &Linear<B>, grads: &GradientsParams) -> Vec<f32> {
    let g = grads.get::<<B as AutodiffBackend>::InnerBackend, 1>(model.bias.as_ref().unwrap().id);
    g.unwrap().into_data().to_vec::<f32>().unwrap()
}

/// What one rank saw at each step: the averaged weight and bias gradients (`None`: the step
/// was off), and the averager's counters.
type Seen = (Vec<Option<(Vec<f32>, Vec<f32>)>>, CommStats);

/// `steps` steps on three ranks, each averaging the same gradients of its own every step
/// (rank `out_of_input` has no batch from step 2 on).
fn run(power_sgd: Option<PowerSgd>, steps: usize, out_of_input: Option<usize>) -> Vec<Seen> {
    let seen: Vec<Seen> = on_threads(InMemoryTransport::cluster(3), |transport| {
        let m = model();
        let rank = transport.rank();
        let mut averager = GradientAverager::new(1 << 20).with_power_sgd(power_sgd);
        let mut seen = Vec::new();
        for step in 0..steps {
            let local = (out_of_input != Some(rank) || step < 2).then(|| LocalStep {
                grads: grads(&m, rank),
                loss: StepLoss::Known(1.0),
            });
            let averaged = averager.average(&m, local, transport).unwrap();
            seen.push(averaged.map(|a| (weight(&m, &a.grads), bias(&m, &a.grads))));
        }
        (seen, averager.take_stats())
    });
    for (rank, (steps, _)) in seen.iter().enumerate() {
        assert_eq!(steps, &seen[0].0, "rank {rank} differs from rank 0");
    }
    seen
}

/// The mean over the three ranks of their gradients, averaged in full.
fn plain() -> (Vec<f32>, Vec<f32>) {
    run(None, 1, None)[0].0[0].clone().unwrap()
}

fn distance(a: &[f32], b: &[f32]) -> f32 {
    let diff: f32 = a.iter().zip(b).map(|(a, b)| (a - b) * (a - b)).sum();
    let norm: f32 = b.iter().map(|b| b * b).sum();
    (diff / norm).sqrt()
}

#[test]
fn at_full_rank_the_average_is_exact_and_travels_as_p_and_q() {
    let (weight, bias) = plain();
    let full = PowerSgd::new(6)
        .with_start_step(0)
        .with_min_compression_rate(0.0);
    let seen = run(Some(full), 1, None);
    let (got_weight, got_bias) = seen[0].0[0].clone().unwrap();
    // Exact but for rounding: Gram-Schmidt in f32 over six columns.
    assert!(
        distance(&got_weight, &weight) < 1e-4,
        "{got_weight:?} vs {weight:?}"
    );
    assert_eq!(got_bias, bias, "a vector is averaged in full");
    // P (8 × 6), the bias and the step entry (with a flag for each of the two); then Q (6 × 6).
    assert_eq!(seen[0].1.bytes, 4 * (48 + 6 + 4 + 36));
    assert_eq!(seen[0].1.steps, 1);
}

#[test]
fn at_rank_one_error_feedback_delivers_what_each_step_leaves_out() {
    let (weight, bias) = plain();
    let steps = 60;
    let seen = run(Some(PowerSgd::new(1).with_start_step(0)), steps, None);
    let applied: Vec<Vec<f32>> = seen[0].0.iter().map(|s| s.clone().unwrap().0).collect();
    // One step sends 14 values for 48 and applies a rank-one approximation.
    let first = distance(&applied[0], &weight);
    assert!(first > 0.05, "the first step is an approximation: {first}");
    // Each rank's error is what the applied gradients still owe it, so their running
    // mean comes to the true mean as the error stays bounded.
    let mut sum = vec![0.0f32; weight.len()];
    for step in &applied {
        sum.iter_mut().zip(step).for_each(|(s, g)| *s += g);
    }
    let mean: Vec<f32> = sum.iter().map(|s| s / steps as f32).collect();
    let behind = distance(&mean, &weight);
    assert!(
        behind < first / 5.0,
        "after {steps} steps: {behind} (first {first})"
    );
    assert!(seen[0].0.iter().all(|s| s.as_ref().unwrap().1 == bias));
    assert_eq!(seen[0].1.bytes, steps as u64 * 4 * (8 + 6 + 4 + 6));
}

#[test]
fn a_matrix_it_would_not_shrink_twofold_and_the_steps_before_the_start_go_in_full() {
    let (weight, _) = plain();
    // Rank 2 would send 28 values for 48: averaged in full by default.
    let seen = run(Some(PowerSgd::new(2).with_start_step(0)), 2, None);
    assert!(seen[0].0.iter().all(|s| s.as_ref().unwrap().0 == weight));
    // Rank 1 from step 2: two exact steps, then an approximation.
    let seen = run(Some(PowerSgd::new(1).with_start_step(2)), 3, None);
    let steps: Vec<Vec<f32>> = seen[0].0.iter().map(|s| s.clone().unwrap().0).collect();
    assert_eq!(steps[0], weight);
    assert_eq!(steps[1], weight);
    assert!(distance(&steps[2], &weight) > 0.05);
}

#[test]
fn a_rank_out_of_input_calls_a_compressed_step_off_on_every_rank() {
    let seen = run(Some(PowerSgd::new(1).with_start_step(0)), 4, Some(1));
    for (steps, stats) in &seen {
        assert!(steps[0].is_some() && steps[1].is_some(), "{steps:?}");
        assert!(steps[2].is_none() && steps[3].is_none(), "{steps:?}");
        assert_eq!(stats.steps, 4);
    }
}
