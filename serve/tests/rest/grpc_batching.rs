//! gRPC calls to a batching server: merged by its batching thread, each answered its own
//! rows, the same as a server that does not batch answers them.

use std::collections::HashMap;
use std::time::Duration;

use estimator_serve::grpc::proto::tensorflow::serving::ClassificationRequest;
use estimator_serve::grpc::proto::tensorflow::TensorProto;
use estimator_serve::{Batching, Loaders, Server};

use crate::grpc::{floats, iris_examples, predict, spec, Grpc};
use crate::support::*;

/// `rows()` as one tensor per feature, every value scaled by `1 + k / 10`: no two calls ask
/// for the same predictions.
fn scaled_inputs(k: usize) -> HashMap<String, TensorProto> {
    let scale = 1.0 + k as f32 / 10.0;
    (FEATURES.iter())
        .map(|name| {
            let column = (rows().iter())
                .map(|r| r[name].as_f64().unwrap() as f32 * scale)
                .collect();
            (name.to_string(), floats(column, &[2]))
        })
        .collect()
}

#[test]
fn grpc_calls_merged_by_a_batching_server_get_their_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("export");
    export_iris(&dir.path().join("model"), &base, 20);
    let direct = Grpc::start(load_iris(&base));
    let batching = Loaders::canned().with_batching(Batching {
        max_batch_size: 64,
        batch_timeout: Duration::from_millis(50),
        ..Batching::default()
    });
    let batched = Grpc::start(Server::load(iris_model(&base), batching).unwrap());
    const CALLS: usize = 6;

    let mut client = direct.predictions();
    let want: Vec<_> = (0..CALLS)
        .map(|k| direct.run(client.predict(predict("iris", scaled_inputs(k)))))
        .map(|answer| answer.unwrap().into_inner().outputs)
        .collect();
    let classify = || ClassificationRequest {
        model_spec: spec("iris"),
        input: iris_examples(),
    };
    let classified = direct.run(client.classify(classify())).unwrap();
    let want_classified = classified.into_inner().result;

    // Sent at once, so that they arrive within the time the batching thread waits for more.
    let client = batched.predictions();
    let (answers, classified) = batched.run(async {
        let calls: Vec<_> = (0..CALLS)
            .map(|k| {
                let mut client = client.clone();
                tokio::spawn(async move { client.predict(predict("iris", scaled_inputs(k))).await })
            })
            .collect();
        let mut client = client.clone();
        let classified = tokio::spawn(async move { client.classify(classify()).await });
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.unwrap().unwrap().into_inner().outputs);
        }
        (
            answers,
            classified.await.unwrap().unwrap().into_inner().result,
        )
    });
    for (k, (answer, want)) in answers.iter().zip(&want).enumerate() {
        assert_eq!(answer, want, "call {k}");
    }
    assert_eq!(classified, want_classified);
}
