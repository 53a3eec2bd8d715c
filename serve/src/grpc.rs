//! TF Serving's gRPC API beside the REST one, on `--grpc-port`: `PredictionService`
//! (Predict, Classify, Regress, GetModelMetadata) and `ModelService` (GetModelStatus,
//! HandleReloadConfigRequest), answering from the same models, versions, instance budget and
//! metrics as the REST routes.

mod examples;
mod model_service;
mod outputs;
mod prediction_service;
mod tensors;

use std::future::Future;

use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tonic::Status;

use crate::error::ServeError;
use crate::server::Server;
use proto::tensorflow::serving::model_service_server::ModelServiceServer;
use proto::tensorflow::serving::prediction_service_server::PredictionServiceServer;

/// TF Serving's messages and services, generated from `proto/` (`build.rs`): the servers
/// this crate runs, and clients for a Rust program to call any TF Serving.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
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
}

impl Server {
    /// Serves TF Serving's gRPC API on `listener` until `shutdown` completes; messages are
    /// held to the limits' body size, and with [`Server::with_grpc_tls`] the connections
    /// are TLS. A TLS config that does not load is an error before anything is served.
    pub async fn run_grpc(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error> {
        let max = self.limits.max_body_bytes;
        let mut builder = tonic::transport::Server::builder();
        if let Some(ssl) = &self.grpc_tls {
            let mut tls = ServerTlsConfig::new()
                .identity(Identity::from_pem(&ssl.server_cert, &ssl.server_key));
            if let Some(ca) = &ssl.custom_ca {
                tls = tls
                    .client_ca_root(Certificate::from_pem(ca))
                    .client_auth_optional(!ssl.client_verify);
            }
            builder = builder.tls_config(tls)?;
        }
        let predictions = PredictionServiceServer::new(self.clone())
            .max_decoding_message_size(max)
            .max_encoding_message_size(usize::MAX);
        let models = ModelServiceServer::new(self).max_decoding_message_size(max);
        // Answers go out as soon as they are written, as gRPC's own servers send them.
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        builder
            .add_service(predictions)
            .add_service(models)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
    }
}

impl From<ServeError> for Status {
    /// The gRPC code TF Serving answers with where its REST API answers the HTTP status.
    fn from(error: ServeError) -> Self {
        match error {
            ServeError::BadRequest(m) => Status::invalid_argument(m),
            ServeError::NotFound(m) => Status::not_found(m),
            ServeError::Timeout(m) => Status::deadline_exceeded(m),
            ServeError::TooLarge(m) => Status::resource_exhausted(m),
            ServeError::Internal(m) => Status::internal(m),
            ServeError::Unavailable(m) => Status::unavailable(m),
        }
    }
}
