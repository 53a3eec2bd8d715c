//! Integration tests of the canned estimators and the `dnn-classifier` binary (one test
//! binary for the crate).

mod canned;
mod cli;
