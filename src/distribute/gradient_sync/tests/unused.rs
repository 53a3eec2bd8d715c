//! Parameters that take no part in a step: frozen ones, and ones some or all ranks' steps
//! did not use. The averager must give every rank the same gradients, and none at all where
//! one process would have none.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};

use super::rows;
use crate::device::CpuTrainBackend as Train;
use crate::distribute::gradient_sync::{GradientAverager, LocalStep};
use crate::distribute::testing::on_threads;
use crate::distribute::{InMemoryTransport, StepLoss, Transport};
use crate::optimizer::extract_gradients;

#[derive(Module, Debug)]
struct Branches<B: Backend> {
    /// Used by every rank.
    shared: Linear<B>,
    /// Used by ranks 1 and 2, not by rank 0.
    some: Linear<B>,
    /// Used by no rank.
    none: Linear<B>,
    /// Used by every rank, not trained.
    frozen: Linear<B>,
}

fn branches() -> Branches<Train> {
    crate::seed::build_seeded::<Train, _>(&Default::default(), 7, || {
        let linear = || LinearConfig::new(3, 2).init(&Default::default());
        Branches {
            shared: linear(),
            some: linear(),
            none: linear(),
            frozen: linear().no_grad(),
        }
    })
}

fn step_grads(m: &Branches<Train>, rank: usize) -> GradientsParams {
    let x = rows(rank * 4, 4);
    let mut y = m.shared.forward(x.clone()) + m.frozen.forward(x.clone());
    if rank != 0 {
        y = y + m.some.forward(x);
    }
    extract_gradients::<Train, _>(m, &mut (y.clone() * y).mean().backward())
}

#[test]
fn unused_parameters_are_averaged_as_zeros_or_left_without_a_gradient_and_frozen_ones_stay_home() {
    type Inner = <Train as AutodiffBackend>::InnerBackend;
    let reference = branches();
    // One process over the three ranks' rows: the mean of their losses, rank 0's without
    // `some`. So `some`'s gradient is (g1 + g2) / 3.
    let mut want = vec![0.0f32; 6];
    for rank in [1, 2] {
        let g = step_grads(&reference, rank)
            .get::<Inner, 2>(reference.some.weight.id)
            .unwrap();
        let g = g.into_data().to_vec::<f32>().unwrap();
        want.iter_mut().zip(g).for_each(|(w, g)| *w += g / 3.0);
    }
    let seen = on_threads(InMemoryTransport::cluster(3), |transport| {
        let m = branches();
        let local = LocalStep {
            grads: step_grads(&m, transport.rank()),
            loss: StepLoss::Known(1.0),
        };
        let mut averager = GradientAverager::new(1 << 20);
        let averaged = averager
            .average::<Train, _, _>(&m, Some(local), transport)
            .unwrap();
        let grads = averaged.expect("every rank took the step").grads;
        let read = |id| {
            grads
                .get::<Inner, 2>(id)
                .map(|g| g.into_data().to_vec::<f32>().unwrap())
        };
        let seen = [m.some.weight.id, m.none.weight.id, m.frozen.weight.id].map(read);
        (seen, averager.take_stats().bytes)
    });
    for ([some, none, frozen], bytes) in &seen {
        assert_eq!(some, &seen[0].0[0], "ranks differ");
        let some = some
            .as_ref()
            .expect("rank 0 too applies what ranks 1 and 2 sent");
        for (got, want) in some.iter().zip(&want) {
            assert!((got - want).abs() < 1e-5, "{some:?} vs {want:?}");
        }
        assert_eq!(
            none, &None,
            "no rank used it: no gradient, as in one process"
        );
        assert_eq!(frozen, &None, "frozen: never averaged, never updated");
        // shared, some and none (weight and bias each), the step entry with a flag for
        // each of those six; the frozen layer's 8 values stay home.
        assert_eq!(*bytes, 4 * (3 * 8 + 2 + 6));
    }
}
