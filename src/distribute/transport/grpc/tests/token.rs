//! The cluster token: calls without it are refused, a rank with another one cannot join.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tonic::Code;

use super::super::collective_proto::collective_client::CollectiveClient;
use super::super::collective_proto::{Envelope, HelloRequest};
use super::super::metadata;
use super::super::token_value;
use super::{config, connect, input, listeners, on_threads, try_connect};
use crate::distribute::{all_reduce_sum, CollectiveFault, GrpcConfig, GrpcTransport, Transport};

/// Calls `address`'s server with the generated client, claiming rank `rank` of 2 and
/// presenting `token` if any: the codes of `Hello` and of `Deliver`.
fn raw_calls(address: SocketAddr, rank: usize, token: Option<&str>) -> (Code, Code) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = CollectiveClient::connect(format!("http://{address}"))
            .await
            .unwrap();
        let token = token.map(|t| token_value(t).unwrap());
        let hello = HelloRequest {
            rank: rank as u32,
            world_size: 2,
        };
        let hello = client
            .hello(metadata::outgoing(hello, rank, token.as_ref()))
            .await
            .map_or_else(|status| status.code(), |_| Code::Ok);
        let stream = tokio_stream::iter(vec![Envelope {
            tag: 1,
            payload: vec![1].into(),
        }]);
        let deliver = client
            .deliver(metadata::outgoing(stream, rank, token.as_ref()))
            .await
            .map_or_else(|status| status.code(), |_| Code::Ok);
        (hello, deliver)
    })
}

#[test]
fn a_cluster_with_a_token_works_and_refuses_calls_without_it() {
    let with_token = GrpcConfig {
        token: Some("s3cret-token".into()),
        ..config()
    };
    let out = on_threads(connect(2, with_token), |mut t| {
        let mut values = input(t.rank(), 10);
        all_reduce_sum(&mut t, &mut values).unwrap();
        let other = 1 - t.rank();
        let calls = [None, Some("wrong-token"), Some("s3cret-token")]
            .map(|token| raw_calls(t.local_addr(), other, token));
        t.shutdown().unwrap();
        (values, calls)
    });
    assert_eq!(out[0].0, out[1].0);
    for (_, [missing, wrong, right]) in out {
        assert_eq!(missing, (Code::Unauthenticated, Code::Unauthenticated));
        assert_eq!(wrong, (Code::Unauthenticated, Code::Unauthenticated));
        // With the token the calls get through: the stream of that rank is already open.
        assert_eq!(right, (Code::Ok, Code::AlreadyExists));
    }
}

#[test]
fn ranks_with_different_tokens_both_name_the_token_at_once() {
    let configs = ["s3cret", "other"]
        .map(|token| GrpcConfig {
            token: Some(token.into()),
            connect_timeout: Duration::from_secs(20),
            ..config()
        })
        .to_vec();
    let start = Instant::now();
    let out = try_connect(configs);
    // The rank refused first keeps answering until the other has been refused too, rather
    // than leave it to wait out its start-up timeout for a peer that is gone.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    for (rank, result) in out.into_iter().enumerate() {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, CollectiveFault::Refused { rank: r, .. } if *r == 1 - rank),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("missing or wrong cluster token")
                && message.contains("ESTIMATOR_CLUSTER_TOKEN"),
            "{message}"
        );
    }
}

#[test]
fn a_peer_refused_for_its_token_that_left_is_reported_as_a_configuration_error() {
    // Rank 1 calls with another token and goes away before rank 0 reaches it (it never
    // listens): rank 0 does not report a peer that could not be reached (retryable) but the
    // token, with the address the refused call came from.
    let (mut listeners, addresses) = listeners(2);
    drop(listeners.pop());
    let config = GrpcConfig {
        token: Some("s3cret".into()),
        connect_timeout: Duration::from_secs(2),
        ..config()
    };
    let own = addresses[0].parse().unwrap();
    let err = std::thread::scope(|scope| {
        let rank0 = scope.spawn(|| {
            GrpcTransport::connect_with_listener(0, &addresses, listeners.remove(0), config)
                .unwrap_err()
        });
        assert_eq!(
            raw_calls(own, 1, Some("other")),
            (Code::Unauthenticated, Code::Unauthenticated)
        );
        rank0.join().unwrap()
    });
    assert!(
        matches!(&err, CollectiveFault::Refused { rank: 1, .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("could not be reached at {}", addresses[1]))
            && message.contains("refused a call from 127.0.0.1:")
            && message.contains("claiming to be rank 1 for a missing or wrong cluster token")
            && message.contains("ESTIMATOR_CLUSTER_TOKEN"),
        "{message}"
    );
}
