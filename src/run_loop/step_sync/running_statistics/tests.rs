//! Three replicas in threads: batch normalisation's running statistics end identical and
//! at the mean of the replicas', also when they start moving late; a frozen layer stays bit
//! for bit as built.

use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::{RunningStatistics, RECHECK_EVERY};
use crate::device::CpuTrainBackend as Train;
use crate::distribute::{GradientAverager, InMemoryTransport, LocalStep, StepLoss, Transport};
use crate::optimizer::extract_gradients;

#[derive(Module, Debug)]
struct Normed<B: Backend> {
    norm: BatchNorm<B>,
    frozen: Linear<B>,
    out: Linear<B>,
}

fn normed() -> Normed<Train> {
    crate::seed::build_seeded::<Train, _>(&Default::default(), 3, || {
        let device = Default::default();
        Normed {
            norm: BatchNormConfig::new(4).init(&device),
            frozen: LinearConfig::new(4, 2).init(&device).no_grad(),
            out: LinearConfig::new(4, 2).init(&device),
        }
    })
}

/// Rank `rank`'s batch at `step`: each rank's rows have their own mean.
fn batch(rank: usize, step: usize) -> Tensor<Train, 2> {
    let values: Vec<f32> = (0..8 * 4)
        .map(|i| ((i * 7 + step * 3) % 11) as f32 * 0.3 + rank as f32)
        .collect();
    Tensor::from_data(TensorData::new(values, [8, 4]), &Default::default())
}

fn values<const D: usize>(tensor: Tensor<Train, D>) -> Vec<f32> {
    tensor.into_data().to_vec::<f32>().unwrap()
}

/// What one replica saw at a step: its own running mean before the synchronisation, the
/// synchronised one, and how many values were held after it.
type Seen = (Vec<f32>, Vec<f32>, usize);

/// Three replicas in threads, `steps` steps each, the batch normalisation in the forward
/// pass from step `normed_from` on: what each saw at every step, and its frozen weight at
/// the end.
fn replicas(steps: usize, normed_from: usize) -> Vec<(Vec<Seen>, Vec<f32>)> {
    let handles: Vec<_> = InMemoryTransport::cluster(3)
        .into_iter()
        .map(|mut transport| {
            std::thread::spawn(move || {
                let rank = transport.rank();
                let mut model = normed();
                let mut statistics = RunningStatistics::new(&model);
                let mut averager = GradientAverager::new(1 << 20);
                let mut seen = Vec::new();
                for step in 0..steps {
                    let x = batch(rank, step);
                    let hidden = match step >= normed_from {
                        true => model.norm.forward(x.clone()),
                        false => x.clone(),
                    };
                    let y = model.out.forward(hidden) + model.frozen.forward(x);
                    let grads = extract_gradients::<Train, _>(&model, &mut y.sum().backward());
                    let own_mean = values(model.norm.running_mean.value_sync());
                    let local = LocalStep {
                        grads,
                        loss: StepLoss::Known(1.0),
                    };
                    let moves = statistics.moves(&model);
                    let (_, mean_moves) = averager
                        .average_along::<Train, _, _>(&model, Some(local), moves, &mut transport)
                        .unwrap()
                        .expect("every rank took the step");
                    model = statistics.settle(model, &mean_moves).unwrap();
                    let mean = values(model.norm.running_mean.value());
                    seen.push((own_mean, mean, statistics.len()));
                }
                (seen, values(model.frozen.weight.val()))
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn running_statistics_end_identical_at_the_replicas_mean_and_frozen_values_untouched() {
    let frozen_weight = values(normed().frozen.weight.val());
    let results = replicas(2, 0);
    for step in 0..2 {
        let synced = &results[0].0[step].1;
        let mut want = vec![0.0f32; 4];
        for (seen, _) in &results {
            let (own, mean, held) = &seen[step];
            assert_eq!(mean, synced, "step {step}: replicas differ");
            assert_eq!(
                *held, 8,
                "running mean and variance only: the frozen layer dropped"
            );
            want.iter_mut().zip(own).for_each(|(w, o)| *w += o / 3.0);
        }
        for (got, want) in synced.iter().zip(&want) {
            assert!(
                (got - want).abs() < 1e-5,
                "step {step}: {synced:?} vs {want:?}"
            );
        }
    }
    for (_, frozen) in &results {
        assert_eq!(frozen, &frozen_weight, "the frozen layer, bit for bit");
    }
}

#[test]
fn a_statistic_that_starts_moving_late_ends_identical_once_the_replicas_looked() {
    // `norm` stays out of the forward pass until step 5, so the first step finds it
    // dormant; the look at step 100 wakes it, and from step 101 on it is held.
    let results = replicas(RECHECK_EVERY as usize + 3, 5);
    let (seen, frozen) = &results[0];
    let held: Vec<usize> = seen.iter().map(|(_, _, held)| *held).collect();
    let last = &seen.last().unwrap().1;
    for (other, other_frozen) in &results[1..] {
        assert_eq!(&other.last().unwrap().1, last, "replicas differ");
        assert_eq!(other_frozen, frozen);
        assert!(other.iter().map(|(_, _, n)| *n).eq(held.iter().copied()));
    }
    assert!(last.iter().any(|v| *v != 0.0), "it moved: {last:?}");
    let woken_at = RECHECK_EVERY as usize + 1;
    assert!(held[..woken_at].iter().all(|&n| n == 0), "{held:?}");
    assert!(held[woken_at..].iter().all(|&n| n == 8), "{held:?}");
    assert_eq!(frozen, &values(normed().frozen.weight.val()));
}
