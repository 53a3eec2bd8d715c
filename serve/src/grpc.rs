//! TF Serving's gRPC API beside the REST one, on `--grpc-port`: `PredictionService`
//! (Predict, Classify, Regress, MultiInference, GetModelMetadata) and `ModelService`
//! (GetModelStatus, HandleReloadConfigRequest), answering from the same models, versions,
//! instance budget and metrics as the REST routes.

mod examples;
mod inference_tasks;
mod model_service;
mod multi_inference;
mod outputs;
mod predict;
mod prediction_service;
mod results;
mod tensors;
#[cfg(unix)]
mod unix_socket;
mod warmup;

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_stream::Stream;
use tonic::body::Body;
use tonic::codegen::http::{HeaderValue, Response};
use tonic::transport::server::{Connected, TcpIncoming};
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tonic::{Code, Status};
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::ServingStatus;
use tower::util::MapResponseLayer;

use crate::error::ServeError;
use crate::server::Server;
use proto::tensorflow::serving::model_service_server::ModelServiceServer;
use proto::tensorflow::serving::prediction_service_server::PredictionServiceServer;
pub(crate) use warmup::warm_up;

/// TF Serving's messages and services, generated from `proto/` (`build.rs`): the servers
/// this crate runs, and clients for a Rust program to call any TF Serving.
pub mod proto;

impl Server {
    /// Serves TF Serving's gRPC API on `listener` until `shutdown` completes; messages are
    /// held to the limits' body size, and with [`Server::with_grpc_tls`] the connections
    /// are TLS. A TLS config that does not load is an error before anything is served.
    pub async fn run_grpc(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error> {
        // Answers go out as soon as they are written, as gRPC's own servers send them.
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        self.serve_grpc(incoming, shutdown).await
    }

    /// The gRPC API on the connections of `incoming` (a TCP listener's, a Unix-domain
    /// socket's) until `shutdown` completes.
    pub(crate) async fn serve_grpc<IO, E>(
        self,
        incoming: impl Stream<Item = Result<IO, E>>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error>
    where
        IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let arguments = &self.grpc_arguments;
        let max = (arguments.max_receive_message_length).unwrap_or(self.limits.max_body_bytes);
        let max_answer = arguments.max_send_message_length.unwrap_or(usize::MAX);
        let mut builder = tonic::transport::Server::builder()
            .max_concurrent_streams(arguments.max_concurrent_streams)
            .http2_keepalive_interval(arguments.keepalive_time)
            .http2_keepalive_timeout(arguments.keepalive_timeout);
        if let Some(age) = arguments.max_connection_age {
            builder = builder.max_connection_age(age);
        }
        if let Some(grace) = arguments.max_connection_age_grace {
            builder = builder.max_connection_age_grace(grace);
        }
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
            .max_encoding_message_size(max_answer);
        let health = match self.grpc_health_check {
            true => Some(health_service().await),
            false => None,
        };
        let models = ModelServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max_answer);
        builder
            .layer(MapResponseLayer::new(resource_exhausted_for_oversize))
            .add_service(predictions)
            .add_service(models)
            .add_optional_service(health)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
    }
}

/// gRPC's standard health service, the server and both APIs `SERVING`: under the names
/// TF Serving gives them (`PredictionService`, `ModelService`) and their full ones.
async fn health_service() -> HealthServer<impl Health> {
    let (reporter, service) = tonic_health::server::health_reporter();
    let names = [
        "PredictionService",
        "ModelService",
        "tensorflow.serving.PredictionService",
        "tensorflow.serving.ModelService",
    ];
    for name in names {
        reporter
            .set_service_status(name, ServingStatus::Serving)
            .await;
    }
    service
}

/// A message past the size limit as gRPC's own servers (and TF Serving) answer it:
/// `RESOURCE_EXHAUSTED`, where tonic's decoder says `OUT_OF_RANGE`. No call of this server
/// answers `OUT_OF_RANGE` itself, so each one is tonic's size limit.
fn resource_exhausted_for_oversize(mut response: Response<Body>) -> Response<Body> {
    let status = response.headers().get(GRPC_STATUS);
    if status.is_some_and(|code| code.as_bytes() == b"11") {
        let code = HeaderValue::from(Code::ResourceExhausted as i32);
        response.headers_mut().insert(GRPC_STATUS, code);
    }
    response
}

const GRPC_STATUS: &str = "grpc-status";

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
            ServeError::Unimplemented(m) => Status::unimplemented(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
    use super::proto::tensorflow::serving::{ModelSpec, PredictRequest};
    use super::proto::tensorflow::{DataType, TensorProto};
    use super::*;
    use crate::grpc_channel_arguments::GrpcChannelArguments;
    use crate::limits::Limits;
    use crate::server::testing::serving;
    use estimator::export::DType;

    /// `server`'s gRPC API on a free loopback port: its URL, and a way to stop it and wait.
    async fn started(server: Server) -> (String, impl FnOnce() -> tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(server.run_grpc(listener, async {
            let _ = stopped.await;
        }));
        let stop = move || {
            stop.send(()).unwrap();
            tokio::spawn(async move { served.await.unwrap().unwrap() })
        };
        (url, stop)
    }

    #[tokio::test]
    async fn a_message_above_the_body_limit_is_resource_exhausted_naming_both_sizes() {
        let signature = estimator::Signature::new().with_input("x", DType::Float32);
        let limits = Limits {
            max_body_bytes: 4096,
            ..Limits::default()
        };
        let (url, stop) = started(serving("m", signature.clone(), limits)).await;
        let mut client = PredictionServiceClient::connect(url).await.unwrap();
        let request = |values: usize| {
            let mut x = TensorProto {
                float_val: vec![1.0; values],
                ..TensorProto::default()
            };
            x.set_dtype(DataType::DtFloat);
            PredictRequest {
                model_spec: Some(ModelSpec {
                    name: "m".into(),
                    ..ModelSpec::default()
                }),
                inputs: HashMap::from([("x".to_string(), x)]),
                output_filter: Vec::new(),
            }
        };
        let refused = client.predict(request(2000)).await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        assert!(
            refused.message().contains("the limit is: 4096"),
            "{refused:?}"
        );
        // Under the limit, the request is decoded and checked (its shape is missing).
        let decoded = client.predict(request(10)).await.unwrap_err();
        assert!(decoded.message().contains("has shape []"), "{decoded:?}");
        stop().await.unwrap();

        // TF Serving's grpc.max_receive_message_length sets the gRPC API's limit instead.
        let (arguments, _) =
            GrpcChannelArguments::parse("grpc.max_receive_message_length=1048576").unwrap();
        let server = serving("m", signature, limits).with_grpc_channel_arguments(arguments);
        let (url, stop) = started(server).await;
        let mut client = PredictionServiceClient::connect(url).await.unwrap();
        let decoded = client.predict(request(2000)).await.unwrap_err();
        assert!(decoded.message().contains("has shape []"), "{decoded:?}");
        stop().await.unwrap();
    }

    #[tokio::test]
    async fn the_health_service_answers_serving_when_asked_for_and_is_unimplemented_else() {
        use tonic_health::pb::health_client::HealthClient;
        use tonic_health::pb::HealthCheckRequest;

        let signature = estimator::Signature::new().with_input("x", DType::Float32);
        for on in [true, false] {
            let server = serving("m", signature.clone(), Limits::default());
            let (url, stop) = started(server.with_grpc_health_check(on)).await;
            let channel = tonic::transport::Endpoint::from_shared(url).unwrap();
            let mut health = HealthClient::new(channel.connect().await.unwrap());
            let check = |service: &str| HealthCheckRequest {
                service: service.into(),
            };
            let answers = [
                health.check(check("")).await,
                health.check(check("PredictionService")).await,
                health.check(check("tensorflow.serving.ModelService")).await,
            ];
            for answer in answers {
                match (on, answer) {
                    (true, Ok(answer)) => assert_eq!(answer.into_inner().status, 1, "SERVING"),
                    (false, Err(status)) => assert_eq!(status.code(), Code::Unimplemented),
                    (on, other) => panic!("health service {on}: {other:?}"),
                }
            }
            if on {
                let unknown = health.check(check("Nope")).await.unwrap_err();
                assert_eq!(unknown.code(), Code::NotFound);
            }
            stop().await.unwrap();
        }
    }
}
