//! Integration tests of the canned estimators and of the `dnn-classifier` and
//! `estimator-launch` binaries (one test binary for the crate).

mod canned;
mod cli;
mod cluster;
mod launch;
mod ps_cluster;
