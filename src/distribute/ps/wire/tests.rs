//! Values and messages through the gRPC edge and back.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::messages::{Init, Pulled, PushOutcome, Pushed, Snapshot};
use super::*;

#[test]
fn values_round_trip_bit_exactly() {
    let values = [0.0, -1.5, f32::MIN_POSITIVE, 3.25e7, f32::NAN];
    let encoded = variable("w".into(), &[5], values.to_vec());
    let decoded = f32_values(&encoded).unwrap();
    assert_eq!(
        values.map(f32::to_bits).to_vec(),
        decoded.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(shape(&encoded), vec![5]);
    let broken = proto::Variable {
        path: "w".into(),
        shape: vec![],
        values: Bytes::from_static(&[1, 2, 3]),
    };
    assert!(f32_values(&broken)
        .unwrap_err()
        .to_string()
        .contains("variable w"));
}

#[test]
fn messages_cross_the_edge_unchanged() {
    let init = Init {
        variables: BTreeMap::from([("w".to_string(), (vec![2], vec![1.0, 2.0]))]),
        optimizer_state: vec![1, 2, 3],
        optimizer: "sgd".into(),
        learning_rate: 0.5,
        schedule: Default::default(),
        global_step: 3,
        last_step: 9,
        workers: 2,
        replicas_to_aggregate: 2,
        max_staleness: Some(4),
        generation: 11,
    };
    let back = Init::try_from(proto::InitRequest::try_from(&init).unwrap()).unwrap();
    assert_eq!(
        (back.variables, back.generation, back.max_staleness),
        (init.variables, 11, Some(4))
    );
    let pull = Pull {
        wait: Duration::from_millis(250),
        min_generation: Some(11),
        since: Some(Held {
            generation: 11,
            version: 3,
        }),
    };
    assert_eq!(Pull::from(pull_request(1, pull)), pull);
    let pulled = Pulled::Values {
        step: 4,
        generation: 11,
        version: 9,
        variables: vec![("w".into(), vec![0.5])],
    };
    assert_eq!(
        Pulled::try_from(proto::PullReply::from(pulled.clone())).unwrap(),
        pulled
    );
    let done = Pulled::try_from(proto::PullReply::from(Pulled::Done)).unwrap();
    assert_eq!(done, Pulled::Done);
    let push = Push {
        worker: 1,
        step: 4,
        generation: 11,
        gradients: vec![("w".into(), vec![0.25])],
        assign: vec![("s".into(), vec![2.0])],
        wait: Duration::from_secs(2),
        pull: true,
        since: None,
    };
    assert_eq!(
        Push::try_from(proto::PushRequest::from(push.clone())).unwrap(),
        push
    );
    let pushed = Pushed {
        outcome: PushOutcome::Reinitialised,
        step: 5,
        generation: 12,
        version: 10,
        variables: vec![],
    };
    assert_eq!(
        Pushed::try_from(proto::PushReply::from(pushed.clone())).unwrap(),
        pushed
    );
    let snapshot = Snapshot {
        step: 5,
        variables: BTreeMap::from([("w".to_string(), (vec![1, 2], vec![1.0, 2.0]))]),
        optimizer_state: vec![9],
    };
    let back = Snapshot::try_from(proto::SnapshotReply::from(snapshot.clone())).unwrap();
    assert_eq!(back, snapshot);
}

#[test]
fn an_old_pull_waits_for_no_generation_and_an_unknown_outcome_is_not_applied() {
    let old = proto::PullRequest {
        worker: 2,
        wait_ms: 100,
        min_generation: None,
        since: None,
    };
    assert_eq!(Pull::from(old).min_generation, None);
    let unknown = proto::PushReply {
        outcome: 42,
        ..Default::default()
    };
    assert_eq!(
        Pushed::try_from(unknown).unwrap().outcome,
        PushOutcome::Stale
    );
}

#[test]
fn values_go_on_the_wire_in_their_own_buffer() {
    let values = vec![1.5f32; 1024];
    let address = values.as_ptr() as usize;
    let bytes = f32_bytes(values);
    assert_eq!(bytes.len(), 4096);
    if cfg!(target_endian = "little") {
        assert_eq!(bytes.as_ptr() as usize, address, "not copied");
    }
    assert_eq!(&bytes[..4], &1.5f32.to_le_bytes());
}
