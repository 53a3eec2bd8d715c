//! Mutual TLS: a cluster whose certificates share a CA trains; a rank whose certificate
//! another CA issued, or that has none, cannot join, and says why.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{config, input, on_threads, try_connect};
use crate::cluster::{issue_certificates, write_certificates};
use crate::distribute::{all_reduce_sum, ClusterTls, GrpcConfig, Transport};

/// TLS for `n` tasks on loopback, from a CA of their own written under `dir`.
fn cluster_tls(dir: &Path, n: usize) -> Vec<Arc<ClusterTls>> {
    let tasks: Vec<_> = (0..n)
        .map(|i| (format!("worker:{i}"), vec!["127.0.0.1".to_string()]))
        .collect();
    let (ca, issued) = issue_certificates("test cluster CA", &tasks).unwrap();
    write_certificates(dir, &ca, &issued)
        .unwrap()
        .iter()
        .map(|files| Arc::new(ClusterTls::load(files).unwrap()))
        .collect()
}

fn with_tls(tls: Option<Arc<ClusterTls>>) -> GrpcConfig {
    GrpcConfig {
        tls,
        connect_timeout: Duration::from_secs(5),
        ..config()
    }
}

#[test]
fn a_cluster_with_certificates_of_one_ca_all_reduces() {
    let dir = tempfile::tempdir().unwrap();
    let configs = cluster_tls(dir.path(), 3)
        .into_iter()
        .map(Some)
        .map(with_tls);
    let ranks: Vec<_> = try_connect(configs.collect())
        .into_iter()
        .map(|t| t.expect("connect over TLS"))
        .collect();
    let out = on_threads(ranks, |mut t| {
        let mut values = input(t.rank(), 1000);
        all_reduce_sum(&mut t, &mut values).unwrap();
        t.shutdown().unwrap();
        values
    });
    let expected: Vec<f32> = (0..1000)
        .map(|i| (0..3).map(|r| input(r, 1000)[i]).sum())
        .collect();
    assert!(out.iter().all(|values| *values == expected));
}

#[test]
fn a_rank_with_another_ca_or_no_certificate_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ours = cluster_tls(&dir.path().join("ours"), 2);
    let theirs = cluster_tls(&dir.path().join("theirs"), 2);
    for stranger in [Some(Arc::clone(&theirs[1])), None] {
        let plaintext = stranger.is_none();
        let configs = vec![with_tls(Some(Arc::clone(&ours[0]))), with_tls(stranger)];
        let start = Instant::now();
        let out = try_connect(configs);
        assert!(start.elapsed() < Duration::from_secs(10));
        let messages: Vec<String> = out
            .into_iter()
            .map(|result| result.unwrap_err().to_string())
            .collect();
        if plaintext {
            // Rank 0 finds the stranger's server speaks no TLS.
            assert!(messages[0].contains("TLS: "), "{messages:?}");
        } else {
            // Each side refuses the other's certificate, naming the peer. The side that does
            // so first shuts its server down, so the other may find nobody there instead: a
            // race either side can win on a busy machine. One of them says TLS.
            let refused = |m: &String| m.contains("TLS: ");
            let away = |m: &String| m.contains("could not be reached");
            assert!(
                messages.iter().all(|m| refused(m) || away(m)),
                "{messages:?}"
            );
            assert!(messages.iter().any(refused), "{messages:?}");
        }
    }
}

#[test]
fn the_cluster_keeps_training_while_a_stranger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ours = cluster_tls(&dir.path().join("ours"), 2);
    let theirs = cluster_tls(&dir.path().join("theirs"), 1);
    let configs = ours.into_iter().map(Some).map(with_tls).collect();
    let ranks = connect_all(configs);
    let out = on_threads(ranks, |mut t| {
        let stranger = super::super::config::endpoint(
            &t.local_addr().to_string(),
            Duration::from_secs(2),
            Some(&theirs[0]),
        )
        .unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let refused = runtime.block_on(async {
            let channel = stranger.connect().await;
            let mut client =
                super::super::collective_proto::collective_client::CollectiveClient::new(
                    channel.map_err(|e| e.to_string())?,
                );
            let hello = super::super::collective_proto::HelloRequest {
                rank: 1 - t.rank() as u32,
                world_size: 2,
            };
            client
                .hello(hello)
                .await
                .map(|_| ())
                .map_err(|status| status.to_string())
        });
        let mut values = input(t.rank(), 100);
        all_reduce_sum(&mut t, &mut values).unwrap();
        t.shutdown().unwrap();
        (refused, values)
    });
    assert_eq!(out[0].1, out[1].1);
    for (refused, _) in out {
        assert!(refused.is_err(), "a stranger's call went through");
    }
}

fn connect_all(configs: Vec<GrpcConfig>) -> Vec<crate::distribute::GrpcTransport> {
    try_connect(configs)
        .into_iter()
        .map(|t| t.expect("connect"))
        .collect()
}
