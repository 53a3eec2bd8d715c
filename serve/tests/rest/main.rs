//! The server over loopback, driven by a real HTTP client as a TF Serving client would:
//! status, metadata, both `:predict` formats (serialized tf.Examples too), `:classify`,
//! `:regress`, versions and labels, a new version under load, and the errors with their
//! status codes; cross-origin requests; ambiguous versions, request limits, connections held
//! to their cap and timeouts, and the body-read timeout; TF Serving's configuration files
//! (per-model batching too); the gRPC API (MultiInference and a Unix-domain socket too), with
//! tonic's generated clients, and merged by a batching server.

mod ambiguity;
mod body_timeout;
mod config_files;
mod connections;
mod cors;
mod errors;
mod grpc;
mod grpc_batching;
mod grpc_models;
mod grpc_multi_inference;
mod grpc_unix_socket;
mod limits;
mod per_model_batching;
mod predict;
mod serialized_examples;
mod shaped_inputs;
mod support;
mod versions;
mod warmup;
