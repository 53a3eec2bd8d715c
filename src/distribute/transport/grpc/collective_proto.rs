//! The code generated from `proto/collective.proto` by `build.rs`.

tonic::include_proto!("estimator.collective");
