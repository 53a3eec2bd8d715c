//! Deterministic randomness on backends whose RNG is one process-wide generator.

use std::sync::Mutex;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// Burn's CPU backends keep one global RNG: two trainings in one process (tests, replicas)
/// would interleave their draws. Seeding and drawing happen under this lock.
static BACKEND_RNG: Mutex<()> = Mutex::new(());

/// Seeds `B`'s RNG with `seed` and runs `draw` (model initialisation, a forward pass with
/// dropout) before anyone else can draw from it.
pub(crate) fn with_seed<B: Backend, T>(
    device: &B::Device,
    seed: u64,
    draw: impl FnOnce() -> T,
) -> T {
    let _guard = BACKEND_RNG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    B::seed(device, seed);
    draw()
}

/// The seed of step `step`: randomness depends only on (seed, step), so a resumed run draws
/// exactly what the uninterrupted run would have.
pub(crate) fn step_seed(seed: u64, step: u64) -> u64 {
    let mut z = seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed replica `rank` draws its dropout masks from: rank 0 keeps `seed`, so one
/// replica draws exactly what single-process training draws.
pub(crate) fn replica_seed(seed: u64, rank: usize) -> u64 {
    if rank == 0 {
        seed
    } else {
        step_seed(seed ^ 0xA24B_AED4_963E_E407, rank as u64)
    }
}

/// Builds a model with `build` and initialises every parameter at once, under the RNG lock.
///
/// Burn initialises parameters lazily, on first use; without this the draws would happen
/// later, outside the lock, in whatever order other threads touch the RNG.
pub(crate) fn build_seeded<B: Backend, M: Module<B>>(
    device: &B::Device,
    seed: u64,
    build: impl FnOnce() -> M,
) -> M {
    with_seed::<B, _>(device, seed, || {
        let model = build();
        model.visit(&mut Materialize);
        model
    })
}

struct Materialize;

impl<B: Backend> ModuleVisitor<B> for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let _ = param.val();
    }
}
