//! `estimator-serve`: a model server for estimator exports that speaks TF Serving's REST
//! API, for every canned estimator.

use std::process::ExitCode;

fn main() -> ExitCode {
    estimator_serve::serve_with(estimator_serve::Loaders::canned())
}
