use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::cluster::Error as ClusterError;
use crate::distribute::ps::VariableOptimizerFault;

#[test]
fn a_rendezvous_that_lost_a_rank_is_retryable_and_a_disagreement_a_configuration_error() {
    let lost = Error::from(ClusterError::RendezvousLost(
        "rank 1 cannot reach rank 0's rendezvous".into(),
    ));
    assert_eq!(lost.exit_code(), RETRYABLE_EXIT_CODE);
    assert_eq!(lost.kind(), ErrorKind::PeerLost);
    assert_eq!(lost.to_string(), "rank 1 cannot reach rank 0's rendezvous");
    let refused = Error::from(ClusterError::RendezvousRefused(
        "rank 1 has WORLD_SIZE = 3, rank 0 has 2".into(),
    ));
    assert_eq!(refused.exit_code(), 1);
    assert_eq!(refused.kind(), ErrorKind::Config);
    assert_eq!(
        refused.to_string(),
        "invalid configuration: rank 1 has WORLD_SIZE = 3, rank 0 has 2"
    );
    assert_eq!(Error::from(ClusterError::TokenEmpty).exit_code(), 1);
}

#[test]
fn a_terminated_task_exits_as_killed_by_its_signal_and_its_peers_as_retryable() {
    let here = Error::Terminated {
        global_step: 1200,
        signal: Some(15),
        checkpoint: true,
    };
    assert_eq!(
        (here.kind(), here.exit_code()),
        (ErrorKind::Terminated, 143)
    );
    assert_eq!(
        here.to_string(),
        "training stopped at global_step 1200: this task received SIGTERM; the chief saved a \
         checkpoint there, run the job again to resume from it"
    );
    let interrupted = Error::Terminated {
        global_step: 7,
        signal: Some(2),
        checkpoint: false,
    };
    assert_eq!(interrupted.exit_code(), 130);
    assert_eq!(
        interrupted.to_string(),
        "training stopped at global_step 7: this task received SIGINT; run the job again to \
         resume from the chief's latest checkpoint"
    );
    let peer = Error::Terminated {
        global_step: 1200,
        signal: None,
        checkpoint: true,
    };
    assert_eq!(peer.exit_code(), RETRYABLE_EXIT_CODE);
    assert!(
        peer.to_string()
            .contains("another replica was asked to terminate"),
        "{peer}"
    );
}

/// What a caller does with an error: retry, fix a setting, or point at a damaged file.
fn advice(error: &Error) -> String {
    match error {
        Error::Tls(TlsFault::Unreadable { variable, path, .. }) => {
            format!("fix {variable}: {} cannot be read", path.display())
        }
        Error::CheckpointIndex { path, fault } => {
            format!("repair or remove {} ({fault})", path.display())
        }
        other => match other.kind() {
            ErrorKind::PeerLost => "restart the cluster".into(),
            ErrorKind::Config => "fix the configuration".into(),
            ErrorKind::Request => "fix the request".into(),
            _ => "report it".into(),
        },
    }
}

#[test]
fn callers_match_the_variant_or_its_kind() {
    let tls = Error::Tls(TlsFault::Unreadable {
        variable: "ESTIMATOR_TLS_CA",
        path: PathBuf::from("/s/ca.crt"),
        source: std::io::ErrorKind::NotFound.into(),
    });
    assert_eq!(tls.kind(), ErrorKind::Config);
    assert_eq!(tls.exit_code(), 1);
    assert_eq!(
        advice(&tls),
        "fix ESTIMATOR_TLS_CA: /s/ca.crt cannot be read"
    );
    assert!(
        tls.to_string()
            .starts_with("invalid configuration: ESTIMATOR_TLS_CA (/s/ca.crt): "),
        "{tls}"
    );

    let index = Error::CheckpointIndex {
        path: PathBuf::from("/m/checkpoint"),
        fault: IndexFault::ListedTwice {
            name: "ckpt-5.ckpt".into(),
        },
    };
    assert_eq!(index.kind(), ErrorKind::Checkpoint);
    assert_eq!(
        index.to_string(),
        "/m/checkpoint: corrupt checkpoint index: 'ckpt-5.ckpt' is listed twice"
    );
    assert_eq!(
        advice(&index),
        "repair or remove /m/checkpoint ('ckpt-5.ckpt' is listed twice)"
    );

    let lost = Error::PeerLost {
        task: "worker:1".into(),
        message: "connection reset".into(),
    };
    assert_eq!(
        (advice(&lost), lost.exit_code()),
        ("restart the cluster".into(), RETRYABLE_EXIT_CODE)
    );
    let device = Error::Device {
        index: 1,
        fault: CudaFault::NotBuilt,
    };
    assert_eq!(device.kind(), ErrorKind::Device);
    assert_eq!(
        device.to_string(),
        "device cuda:1: this binary was built without the `cuda` feature"
    );
}

#[test]
fn only_a_lost_peer_is_retryable() {
    let errors = [
        Error::Config("x".into()),
        Error::Label(LabelFault::Missing),
        Error::Panicked { thread: "t".into() },
        Error::Request {
            instance: 0,
            fault: RequestFault::Missing {
                input: "x".into(),
                inputs: None,
            },
        },
    ];
    for error in errors {
        assert_ne!(error.kind(), ErrorKind::PeerLost, "{error}");
        assert_eq!(error.exit_code(), 1, "{error}");
    }
}

#[test]
fn every_ps_fault_is_a_lost_peer_naming_the_task_at_fault() {
    let faults = [
        (
            PsFault::NotInitialised { ps: 1 },
            "lost ps:1: it lost its variables (restarted?) and no chief re-initialised it",
        ),
        (
            PsFault::TasksMissing {
                ranks: vec![1, 2],
                message: "timed out".into(),
            },
            "lost rank 1, rank 2: timed out",
        ),
        (
            PsFault::Unreachable {
                ps: 0,
                message: "connection refused".into(),
            },
            "lost ps:0: cannot reach it: connection refused",
        ),
        (
            PsFault::Unresponsive {
                ps: 2,
                waited: Duration::from_millis(1500),
            },
            "lost ps:2: it did not answer within 1.5s (stopped, hung or cut off)",
        ),
    ];
    for (fault, message) in faults {
        let error = Error::Ps(fault);
        assert_eq!(error.to_string(), message);
        assert_eq!(error.kind(), ErrorKind::PeerLost, "{error}");
        assert_eq!(error.exit_code(), RETRYABLE_EXIT_CODE, "{error}");
    }
}

#[test]
fn a_shards_refusal_is_a_lost_peer_only_where_a_restart_can_fix_it() {
    let lost = [
        ShardFault::NotInitialised,
        ShardFault::ChiefLost {
            chief: "chief:0".into(),
            silent_for: Duration::from_secs(60),
        },
        ShardFault::SyncTimeout {
            missing: vec![1],
            worker: 0,
            step: 3,
            gathered: 1,
            needed: 2,
            wait: Duration::from_secs(10),
        },
    ];
    for fault in lost {
        assert_eq!(Error::Shard(fault).kind(), ErrorKind::PeerLost);
    }
    let refused = Error::Shard(ShardFault::Optimizer(VariableOptimizerFault::State(
        "truncated".into(),
    )));
    assert_eq!(refused.kind(), ErrorKind::Config);
    assert_eq!(refused.exit_code(), 1);
    assert_eq!(refused.to_string(), "optimizer state: truncated");
    let mismatch = Error::Shard(ShardFault::OptimizerMismatch {
        chief: "adam".into(),
        ps: "sgd".into(),
    });
    assert_eq!(
        mismatch.to_string(),
        "the chief trains with optimizer 'adam', this ps task was started with 'sgd'"
    );
    assert_eq!(mismatch.kind(), ErrorKind::Config);
}
