//! The code generated from `proto/parameter_server.proto` by `build.rs`.

tonic::include_proto!("estimator.ps");
