//! TF Serving's messages and services, generated from `proto/` (`build.rs`).
#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// Package `tensorflow`: tensors and signatures.
pub mod tensorflow {
    tonic::include_proto!("tensorflow");
    /// Package `tensorflow.error`: error codes.
    pub mod error {
        tonic::include_proto!("tensorflow.error");
    }
    /// Package `tensorflow.serving`: the services and their calls.
    pub mod serving {
        tonic::include_proto!("tensorflow.serving");
    }
}
