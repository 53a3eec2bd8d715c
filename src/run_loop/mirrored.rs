//! MirroredStrategy: replicas in threads of this process, each training on its own batch,
//! gradients averaged over an in-memory ring.
//!
//! The calling thread reads the input and deals batches round-robin, a whole round (one
//! batch per replica) at a time, so replicas together see the input in order: N replicas
//! with batch b train like one replica with batch N·b. A round the input cannot fill ends
//! training on every replica at the same step.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use datasets::{Dataset, Position};

use super::step_sync::Peers;
use super::training_replica::{train_replica, InProcess};
use crate::checkpoint::{contents, CheckpointListener};
use crate::distribute::{wait_from_secs, InMemoryTransport, Replica};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, TrainOutcome, TrainSpec};

/// Rounds the reader may run ahead of the replicas.
const ROUNDS_AHEAD: usize = 2;

/// Trains `replicas` replicas on `dataset`; replica 0 is the chief and runs `spec`'s hooks
/// and `listener`.
pub fn train<E: Estimator, D: Dataset<Item = E::Batch> + Send>(
    estimator: &E,
    mut dataset: D,
    mut spec: TrainSpec,
    replicas: usize,
    mut listener: Option<&mut CheckpointListener<'_>>,
) -> Result<TrainOutcome> {
    let config = estimator.run_config();
    if spec.resume_input {
        // Replicas only see dealt batches: the reader is what resumes.
        let manager = config.checkpoint_manager();
        if let Some((path, checkpoint)) = manager.latest()? {
            contents::restore_input(&mut dataset, &checkpoint, &path);
        }
    }
    let timeout = wait_from_secs(config.peer_timeout_secs);
    let transports = InMemoryTransport::cluster_with_timeout(replicas, timeout);
    let names: Vec<String> = (0..replicas).map(|r| format!("replica:{r}")).collect();
    let mut senders = Vec::with_capacity(replicas);
    let mut inputs = Vec::with_capacity(replicas);
    for _ in 0..replicas {
        let (tx, rx) = sync_channel(ROUNDS_AHEAD);
        senders.push(tx);
        inputs.push(DealtBatches {
            rx,
            position: dataset.position(),
        });
    }
    let mut chief_hooks = std::mem::take(&mut spec.hooks);
    let results: Vec<Result<TrainOutcome>> = std::thread::scope(|scope| {
        let handles: Vec<_> = transports
            .into_iter()
            .zip(inputs)
            .enumerate()
            .map(|(rank, (transport, input))| {
                let mut replica_spec = TrainSpec {
                    limit: spec.limit,
                    hooks: Vec::new(),
                    // Only the reader resumes: a dealt input cannot restore or read on.
                    resume_input: rank == 0,
                    auto_shard: false,
                    stop_on_signals: spec.stop_on_signals,
                };
                let mut replica_listener = None;
                if rank == 0 {
                    replica_spec.hooks = std::mem::take(&mut chief_hooks);
                    replica_listener = listener.take();
                }
                let replica = Replica::new(Box::new(transport), names.clone());
                scope.spawn(move || {
                    train_replica(
                        estimator,
                        input,
                        replica_spec,
                        Peers::Ring(replica),
                        InProcess { rank, replicas },
                        replica_listener,
                    )
                })
            })
            .collect();
        deal(&mut dataset, senders);
        handles
            .into_iter()
            .enumerate()
            .map(|(rank, h)| h.join().unwrap_or_else(|_| Err(replica_panicked(rank))))
            .collect()
    });
    first_cause(results)
}

fn replica_panicked(rank: usize) -> Error {
    Error::Panicked {
        thread: format!("Mirrored replica:{rank}"),
    }
}

/// Reads whole rounds from `dataset` and hands batch `r` of each round to replica `r`,
/// until the input ends or the replicas stop taking batches.
fn deal<D: Dataset>(dataset: &mut D, senders: Vec<SyncSender<Dealt<D::Item>>>) {
    loop {
        let mut round = Vec::with_capacity(senders.len());
        while round.len() < senders.len() {
            match dataset.next_item() {
                Some(item) => round.push(item),
                None => break,
            }
        }
        let complete = round.len() == senders.len();
        let position = dataset.position();
        for (sender, item) in senders.iter().zip(round) {
            let dealt = Dealt {
                item,
                position: position.clone(),
            };
            if sender.send(dealt).is_err() {
                return;
            }
        }
        if !complete {
            return;
        }
    }
}

/// One batch for one replica, with the reader's position after its whole round.
struct Dealt<T> {
    item: std::result::Result<T, datasets::Error>,
    position: Position,
}

/// A replica's input: the batches dealt to it.
struct DealtBatches<T> {
    rx: Receiver<Dealt<T>>,
    position: Position,
}

impl<T: Send> Dataset for DealtBatches<T> {
    type Item = T;

    fn next_item(&mut self) -> Option<std::result::Result<T, datasets::Error>> {
        let dealt = self.rx.recv().ok()?;
        self.position = dealt.position;
        Some(dealt.item)
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    /// The reader's position after the last round this replica took a batch from: what the
    /// chief's checkpoints record.
    fn position(&self) -> Position {
        self.position.clone()
    }

    /// The reader was restored before dealing; nothing to do here.
    fn restore(&mut self, _position: &Position) -> std::result::Result<(), datasets::Error> {
        Ok(())
    }
}

/// The chief's outcome, or the error that started a failure: a replica that lost a peer
/// only reports the consequence of another replica's error.
fn first_cause(results: Vec<Result<TrainOutcome>>) -> Result<TrainOutcome> {
    let mut chief = None;
    let mut cause = None;
    let mut consequence = None;
    for (rank, result) in results.into_iter().enumerate() {
        match result {
            Ok(outcome) if rank == 0 => chief = Some(outcome),
            Ok(_) => {}
            Err(e @ (Error::PeerLost { .. } | Error::Terminated { signal: None, .. })) => {
                consequence.get_or_insert(e);
            }
            Err(e) => {
                cause.get_or_insert(e);
            }
        }
    }
    match (cause.or(consequence), chief) {
        (Some(error), _) => Err(error),
        (None, Some(outcome)) => Ok(outcome),
        (None, None) => Err(replica_panicked(0)),
    }
}
