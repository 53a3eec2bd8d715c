//! `estimator-serve`: a model server for estimator exports that speaks TF Serving's REST
//! API, for every canned estimator.

use std::process::ExitCode;

/// A request's many small allocations, served by mimalloc ([`estimator_serve::ServingAllocator`]).
#[global_allocator]
static ALLOCATOR: estimator_serve::ServingAllocator = estimator_serve::ServingAllocator;

fn main() -> ExitCode {
    estimator_serve::serve_with(estimator_serve::Loaders::canned())
}
