//! Ranks as threads of one process meeting over 127.0.0.1 at a port chosen at run time.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use super::*;
use crate::launched::{Launcher, RendezvousAddress};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn rank(rank: usize, world_size: usize, port: u16) -> LaunchedRank {
    LaunchedRank {
        launcher: Launcher::Torchrun,
        rank,
        world_size,
        local_rank: Some(rank),
        rendezvous: RendezvousAddress {
            host: "127.0.0.1".into(),
            port,
            from: "MASTER_ADDR, MASTER_PORT".into(),
        },
    }
}

/// Runs `ranks` on threads, each with its token and timeout; their results in rank order.
fn meet(
    ranks: Vec<(LaunchedRank, Option<&'static str>)>,
    timeout: Duration,
) -> Vec<Result<ClusterConfig, Error>> {
    let threads: Vec<_> = ranks
        .into_iter()
        .map(|(me, token)| thread::spawn(move || rendezvous(&me, token, timeout)))
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn three_ranks_agree_on_one_cluster_with_rank_0_as_chief() {
    let port = free_port();
    let results = meet(
        (0..3)
            .rev()
            .map(|r| (rank(r, 3, port), Some("s3cret")))
            .collect(),
        Duration::from_secs(20),
    );
    let configs: Vec<ClusterConfig> = results.into_iter().map(Result::unwrap).collect();
    let cluster = match &configs[0] {
        ClusterConfig::Distributed { cluster, .. } => cluster.clone(),
        ClusterConfig::Local => panic!("a cluster"),
    };
    assert!(cluster.ps.is_empty() && cluster.evaluator.is_none());
    assert_eq!(cluster.workers.len(), 2);
    let chief = cluster.chief.clone().unwrap();
    assert!(chief.starts_with("127.0.0.1:"), "{chief}");
    assert_ne!(
        chief,
        format!("127.0.0.1:{port}"),
        "the rendezvous port is not the chief's"
    );
    let mut all = vec![chief];
    all.extend(cluster.workers.iter().cloned());
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 3, "{cluster:?}");
    // Threads ran ranks 2, 1, 0.
    for (config, r) in configs.iter().zip([2usize, 1, 0]) {
        let ClusterConfig::Distributed {
            cluster: theirs,
            task,
        } = config
        else {
            panic!("a cluster");
        };
        assert_eq!(*theirs, cluster);
        assert_eq!(cluster.global_rank(*task), Some(r));
        assert_eq!(config.is_chief(), r == 0);
    }
}

#[test]
fn a_rank_with_another_world_size_fails_itself_and_rank_0_naming_the_variable() {
    let port = free_port();
    let results = meet(
        vec![(rank(0, 2, port), None), (rank(1, 3, port), None)],
        Duration::from_secs(20),
    );
    // Ranks that disagree stay in disagreement: a restart cannot mend it.
    assert!(results
        .iter()
        .all(|r| r.as_ref().is_err_and(|e| !e.is_retryable())));
    let rank0 = results[0].as_ref().unwrap_err().to_string();
    assert!(
        rank0.starts_with("rank 1 at 127.0.0.1:")
            && rank0.ends_with("has WORLD_SIZE = 3, rank 0 has 2"),
        "{rank0}"
    );
    let rank1 = results[1].as_ref().unwrap_err().to_string();
    assert!(
        rank1.starts_with(&format!(
            "rank 1: rank 0's rendezvous at 127.0.0.1:{port} (MASTER_ADDR, MASTER_PORT) refused \
             rank 1: rank 1 at"
        )),
        "{rank1}"
    );
}

#[test]
fn a_rank_without_rank_0_gives_up_at_its_deadline_naming_the_address() {
    let port = free_port();
    let started = Instant::now();
    let error = rendezvous(&rank(1, 2, port), None, Duration::from_secs(1)).unwrap_err();
    // Rank 0 may come up late: a restart can mend it.
    assert!(error.is_retryable(), "{error}");
    let error = error.to_string();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.starts_with(&format!(
            "rank 1 cannot reach rank 0's rendezvous at 127.0.0.1:{port} (MASTER_ADDR, \
             MASTER_PORT) within 1 s: "
        )),
        "{error}"
    );
}

#[test]
fn rank_0_names_the_ranks_that_never_joined_and_the_strangers_it_turned_away() {
    let port = free_port();
    let me = rank(0, 3, port);
    let rank0 = thread::spawn(move || rendezvous(&me, Some("s3cret"), Duration::from_secs(3)));
    // A stranger that sends no rendezvous message, then a rank with another token.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut stranger = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("rank 0 never listened: {e}"),
        }
    };
    stranger.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let wrong = rendezvous(&rank(2, 3, port), Some("other"), Duration::from_secs(3)).unwrap_err();
    assert!(!wrong.is_retryable(), "{wrong}");
    let wrong = wrong.to_string();
    assert!(
        wrong.ends_with(
            "refused rank 2: its cluster token (ESTIMATOR_CLUSTER_TOKEN) is not rank 0's"
        ),
        "{wrong}"
    );
    let error = rank0.join().unwrap().unwrap_err();
    assert!(error.is_retryable(), "{error}");
    let error = error.to_string();
    assert!(
        error.starts_with(&format!(
            "rank 0 waited 3 s at 127.0.0.1:{port} (MASTER_ADDR, MASTER_PORT) for rank(s) 1, 2 \
             of 3 (RANK) to join the rendezvous; turned away: 127.0.0.1:"
        )),
        "{error}"
    );
    assert!(error.contains("(no rendezvous message)"), "{error}");
    assert!(error.ends_with("claiming rank 2 (token)"), "{error}");
}

#[test]
fn a_rank_0_that_cannot_listen_names_the_address_and_its_variables() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let error = rendezvous(&rank(0, 2, port), None, Duration::from_secs(1))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(&format!(
            "rank 0 cannot listen for the rendezvous on 127.0.0.1:{port} (MASTER_ADDR, \
             MASTER_PORT): "
        )),
        "{error}"
    );
}

#[test]
fn secrets_compare_equal_only_when_equal() {
    assert!(same_secret("abc", "abc"));
    assert!(!same_secret("abc", "abd"));
    assert!(!same_secret("abc", "ab"));
    assert!(same_secret("", ""));
}

#[test]
fn rank_0_listens_on_loopback_only_for_a_loopback_host() {
    assert_eq!(listen_ip("127.0.0.1"), IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(listen_ip("LocalHost"), IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(listen_ip("::1"), IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_eq!(listen_ip("job-master-0"), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!(listen_ip("10.1.2.3"), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!(listen_ip("fe80::1"), IpAddr::V6(Ipv6Addr::UNSPECIFIED));
}
