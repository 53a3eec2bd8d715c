//! `estimator-serve`: serves the exports of estimator models over TF Serving's REST API
//! (`/v1/models/{name}[/versions/{v} | /labels/{l}][:predict | :classify | :regress]`,
//! status and metadata), loading new versions as they appear under each model's base path.
//!
//! Every canned estimator serves with no code ([`Loaders::canned`]); a user's estimator
//! serves once it implements [`ServableEstimator`] (a trait of the core `estimator` crate,
//! re-exported here, so the user's library need not depend on this one) and is added with
//! [`Loaders::with`].

mod accept;
mod b64;
mod background;
mod batching;
mod batching_parameters;
mod body_tensors;
mod body_timeout;
mod budget;
mod cli;
mod config_watch;
mod connection;
mod connections;
mod cors;
mod dir_stamp;
mod error;
mod example_instance;
mod example_tensors;
mod example_wire;
mod flag_spelling;
pub mod grpc;
mod grpc_channel_arguments;
mod http;
mod ignored_flags;
mod inputs;
mod limits;
mod load_fault;
mod loaders;
mod metrics;
mod model_config;
mod model_config_file;
mod monitoring_config;
mod prediction_threads;
mod program;
mod request;
mod routes;
mod same_export;
mod serialized_examples;
mod servable;
mod server;
mod signatures;
mod ssl_config;
mod stacked;
mod tensor_response;
mod text_proto;
mod version_policy;
mod versions;

pub use background::Background;
pub use batching::{Batched, Batching};
pub use error::ServeError;
pub use estimator::export::{
    check_instance, check_instances, float_input, floats_input, prediction_json, text_input,
    Instance, RequestFault, ServableEstimator,
};
pub use grpc_channel_arguments::GrpcChannelArguments;
pub use inputs::Inputs;
pub use limits::{
    default_max_connections, Limits, DEFAULT_BODY_LIMIT, DEFAULT_MAX_INSTANCES_IN_FLIGHT,
    DEFAULT_MAX_INSTANCES_PER_REQUEST, DEFAULT_TIMEOUT,
};
pub use load_fault::LoadFault;
pub use loaders::{LoadRetries, Loaders};
pub use metrics::{Entrypoint, Metrics};
pub use model_config::ModelConfig;
pub use model_config_file::ModelConfigFile;
pub use monitoring_config::{MonitoringConfig, DEFAULT_METRICS_PATH};
pub use prediction_threads::PredictionThreads;
pub use program::{serve, serve_with};
pub use request::Format;
pub use servable::{Outputs, OutputsAnswer, Predictions, Servable, Served};
pub use server::Server;
pub use ssl_config::SslConfig;
pub use version_policy::VersionPolicy;
pub use versions::ModelVersions;

/// The allocator `estimator-serve` runs with, for a serving program of one's own to run with
/// too: `#[global_allocator] static ALLOCATOR: ServingAllocator = ServingAllocator;`. It is
/// mimalloc, as TF Serving runs on tcmalloc: serving a request allocates many small maps and
/// values, which glibc's allocator serves markedly slower.
pub use mimalloc::MiMalloc as ServingAllocator;
