//! The gRPC API on a Unix-domain socket (TF Serving's `--grpc_socket_path`), called by a
//! tonic client over that socket: a stale socket replaced, another file refused, the socket
//! removed when the API stops.

use estimator_serve::grpc::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::ClassificationRequest;
use hyper_util::rt::TokioIo;
use tonic::transport::{Endpoint, Uri};

use crate::grpc::{iris_examples, spec};
use crate::support::*;

#[test]
fn the_grpc_api_answers_on_a_unix_socket_that_replaces_a_stale_one_and_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let server = load_iris(&base);
    let path = dir.path().join("grpc.sock");
    // A socket an earlier run left behind.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let _entered = runtime.enter();
    let serving = server.clone().run_grpc_unix(path.clone(), async {
        let _ = stopped.await;
    });
    let served = runtime.spawn(serving.unwrap());
    let classified = runtime.block_on(async {
        let socket = path.clone();
        let channel = Endpoint::try_from("http://[::]:50051")
            .unwrap()
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(socket).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }))
            .await
            .unwrap();
        let request = ClassificationRequest {
            model_spec: spec("iris"),
            input: iris_examples(),
        };
        let mut client = PredictionServiceClient::new(channel);
        client.classify(request).await.unwrap().into_inner()
    });
    assert_eq!(classified.result.unwrap().classifications.len(), 2);
    stop.send(()).unwrap();
    runtime.block_on(served).unwrap().unwrap();
    assert!(!path.exists(), "the socket is removed when the API stops");

    // A file that is not a socket is not replaced.
    std::fs::write(&path, "notes").unwrap();
    let Err(refused) = server.run_grpc_unix(path.clone(), async {}) else {
        panic!("a file that is not a socket replaced")
    };
    assert!(
        format!("{refused:#}").contains("a file that is not a socket is there"),
        "{refused:#}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "notes");
}
