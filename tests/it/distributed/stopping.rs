//! How replicas stop: together at the same step when the input runs out unevenly, and with an
//! error naming a replica that vanishes.

use std::time::Duration;

use estimator::datasets::{from_vec, DatasetExt};
use estimator::distribute::{
    CollectiveFault, InMemoryTransport, Replica, Result as DistributeResult, Strategy, Transport,
};
use estimator::{Error, EstimatorExt, OptimizerSpec, TrainSpec};

use super::{classifier, input, BATCH, STEPS};
use crate::support::examples;

#[test]
fn uneven_input_stops_every_replica_at_the_same_step() {
    // 240 rows in batches of 8 is 30 batches: 3 replicas get 10 each, but replica 2's
    // tenth batch is missing when the input has 29 batches, so all stop after 9 steps.
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..3).map(|r| format!("worker:{r}")).collect();
    let handles: Vec<_> = InMemoryTransport::cluster_with_timeout(3, Duration::from_secs(20))
        .into_iter()
        .map(|transport| {
            let estimator = classifier(dir.path(), OptimizerSpec::adam(0.01));
            let replica = Replica::new(Box::new(transport), names.clone());
            std::thread::spawn(move || {
                estimator.train_with(
                    || Ok(from_vec(examples()).batch(BATCH, false).take(29)),
                    TrainSpec::until_input_ends(),
                    Strategy::MultiWorkerMirrored(replica),
                )
            })
        })
        .collect();
    let steps: Vec<u64> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().global_step)
        .collect();
    assert_eq!(steps, vec![9, 9, 9]);
}

/// A transport whose process "dies" after `sends_left` messages: it drops its end, as a
/// killed process's connections close.
struct Dying {
    inner: Option<InMemoryTransport>,
    rank: usize,
    world_size: usize,
    sends_left: usize,
}

impl Transport for Dying {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world_size(&self) -> usize {
        self.world_size
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> DistributeResult<()> {
        if self.sends_left == 0 {
            self.inner = None;
        }
        self.sends_left = self.sends_left.saturating_sub(1);
        match self.inner.as_mut() {
            Some(inner) => inner.send(to, tag, payload),
            None => Err(CollectiveFault::invalid("this process was killed")),
        }
    }

    fn recv(&mut self, from: usize, tag: u64) -> DistributeResult<Vec<u8>> {
        match self.inner.as_mut() {
            Some(inner) => inner.recv(from, tag),
            None => Err(CollectiveFault::invalid("this process was killed")),
        }
    }
}

#[test]
fn a_replica_that_vanishes_is_named_by_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = vec!["chief:0".into(), "worker:0".into()];
    let mut transports = InMemoryTransport::cluster_with_timeout(2, Duration::from_secs(20));
    let worker = Dying {
        inner: transports.pop(),
        rank: 1,
        world_size: 2,
        sends_left: 20,
    };
    let chief = transports.pop().unwrap();
    let worker_thread = {
        let estimator = classifier(&dir.path().join("worker"), OptimizerSpec::adam(0.01));
        let replica = Replica::new(Box::new(worker), names.clone());
        std::thread::spawn(move || {
            estimator.train_with(
                || input(BATCH),
                TrainSpec::max_steps(STEPS),
                Strategy::MultiWorkerMirrored(replica),
            )
        })
    };
    let estimator = classifier(&dir.path().join("chief"), OptimizerSpec::adam(0.01));
    let started = std::time::Instant::now();
    let err = estimator
        .train_with(
            || input(BATCH),
            TrainSpec::max_steps(STEPS),
            Strategy::MultiWorkerMirrored(Replica::new(Box::new(chief), names)),
        )
        .unwrap_err();
    assert!(worker_thread.join().unwrap().is_err());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "noticed at once, not after the timeout"
    );
    assert!(matches!(err, Error::PeerLost { .. }), "{err:?}");
    assert!(err.to_string().starts_with("lost worker:0: "), "{err}");
    assert!(err.exit_code() >= 128);
}
