//! Serves exports of the click-through-rate model over TF Serving's REST API, with
//! `estimator-serve`'s flags, limits and timeouts:
//!
//! `cargo run --release -p ctr_estimator --features serve --bin ctr_estimator_serve --
//! --model-name ctr --model-base-path model_dir/ctr/export`

use std::process::ExitCode;

/// A request's many small allocations, served by mimalloc ([`estimator_serve::ServingAllocator`]).
#[global_allocator]
static ALLOCATOR: estimator_serve::ServingAllocator = estimator_serve::ServingAllocator;

fn main() -> ExitCode {
    estimator_serve::serve::<ctr_estimator::CtrClassifier>()
}
