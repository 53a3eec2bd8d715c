//! Serves exports of the Iris MLP over TF Serving's REST API, with `estimator-serve`'s
//! flags, limits and timeouts:
//!
//! `cargo run --release -p custom_estimator --features serve --bin custom_estimator_serve --
//! --model-name iris --model-base-path model_dir/iris/export`

use std::process::ExitCode;

/// A request's many small allocations, served by mimalloc ([`estimator_serve::ServingAllocator`]).
#[global_allocator]
static ALLOCATOR: estimator_serve::ServingAllocator = estimator_serve::ServingAllocator;

fn main() -> ExitCode {
    estimator_serve::serve::<custom_estimator::IrisClassifier>()
}
