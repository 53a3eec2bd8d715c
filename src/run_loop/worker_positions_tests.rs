use std::time::Instant;

use datasets::{from_vec, Dataset, Position, VecDataset};
use serde_json::json;

use super::*;
use crate::checkpoint::Checkpoint;
use crate::device::CpuTrainBackend;
use crate::run_loop::step_sync::{Ready, Started, Synced};
use crate::run_loop::train_state::TrainState;

type B = CpuTrainBackend;
type M = burn::nn::Linear<B>;

/// A replica of a cluster of two whose checkpoints may hold shared positions: it records
/// what it is asked to share.
struct Replica {
    rank: usize,
    shared: Vec<(u64, Position)>,
}

impl StepSync<B, M> for Replica {
    fn is_chief(&self) -> bool {
        self.rank == 0
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn prepare(&mut self, _: TrainState<B, M>, _: &dyn Fn(u64) -> u64) -> Result<Started<B, M>> {
        unreachable!()
    }
    fn ready(&mut self, _: TrainState<B, M>, _: bool) -> Result<(TrainState<B, M>, Ready)> {
        unreachable!()
    }
    fn exchange(
        &mut self,
        _: TrainState<B, M>,
        _: Option<crate::distribute::LocalStep>,
    ) -> Result<(TrainState<B, M>, Synced)> {
        unreachable!()
    }
    fn finish(&mut self, _: &TrainState<B, M>) -> Result<u32> {
        unreachable!()
    }
    fn share_positions(&mut self, step: u64, position: Position) -> Result<()> {
        self.shared.push((step, position));
        Ok(())
    }
    fn own_position(&self, checkpoint: &Checkpoint) -> Option<(u64, Position)> {
        SharedPositions::own(checkpoint, self.rank, 2)
    }
}

/// One item per global step: item `i` is the batch of step `i + 1`.
fn input() -> VecDataset<u64> {
    from_vec((0..100).collect())
}

/// A checkpoint at `step` holding the chief's position `Index(chief)` and, when given, the
/// positions both replicas shared at `shared`.
fn checkpoint(step: u64, chief: u64, shared: Option<(u64, [u64; 2])>) -> Restored {
    let mut checkpoint = Checkpoint::new(step, json!({ "input_position": Position::Index(chief) }));
    if let Some((at, [a, b])) = shared {
        let mut positions = SharedPositions::new(at);
        for p in [a, b] {
            positions
                .push(&SharedPositions::encode(&Position::Index(p)))
                .unwrap();
        }
        positions.put(&mut checkpoint);
    }
    Restored {
        source: format!("ckpt-{step}").into(),
        checkpoint,
    }
}

/// The next item of replica `rank`'s input resumed from `restored`, and what it shared.
fn resumed(config: &RunConfig, rank: usize, restored: Option<Restored>) -> (u64, Replica) {
    let mut sync = Replica {
        rank,
        shared: Vec::new(),
    };
    let mut own = WorkerPositions::new(config, rank, rank == 0);
    let mut data = input();
    let step = restored.as_ref().map_or(0, |r| r.checkpoint.global_step);
    own.resume(&mut sync, &mut data, restored, step, true)
        .unwrap();
    (data.next_item().unwrap().unwrap(), sync)
}

#[test]
fn a_synchronous_worker_resumes_at_the_checkpoint_step_from_its_shared_position() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig::new(dir.path());
    // Shared at 20 (the worker had read 20 batches), checkpointed at 20 or 25.
    for (step, next) in [(20, 20), (25, 25)] {
        let restored = checkpoint(step, 99, Some((20, [98, 20])));
        let (item, sync) = resumed(&config, 1, Some(restored));
        assert_eq!(item, next, "checkpoint at {step}");
        // It shares where it starts, so that the next checkpoints hold it.
        assert_eq!(sync.shared, [(step, Position::Index(step))]);
    }
    // The chief's own position is the checkpoint's.
    assert_eq!(
        resumed(&config, 0, Some(checkpoint(25, 7, Some((20, [98, 20]))))).0,
        7
    );
    // A checkpoint written before replicas shared theirs, or by a cluster of another size:
    // the chief's position, as before.
    assert_eq!(resumed(&config, 1, Some(checkpoint(25, 7, None))).0, 7);
    let mut three = checkpoint(25, 7, None);
    let shared =
        json!({"global_step": 20, "positions": [{"index": 1}, {"index": 2}, {"index": 3}]});
    three.checkpoint.meta[SHARED_KEY] = shared;
    assert_eq!(resumed(&config, 1, Some(three)).0, 7);
    // A fresh start reads from the beginning.
    assert_eq!(resumed(&config, 1, Some(checkpoint(0, 7, None))).0, 0);
}

#[test]
fn positions_are_shared_at_checkpoint_steps_and_every_hundred_steps() {
    let dir = tempfile::tempdir().unwrap();
    for (config, expected) in [
        (
            RunConfig::new(dir.path()).with_save_checkpoints_steps(10),
            (25..=125).step_by(10).collect(),
        ),
        (
            RunConfig::new(dir.path()).with_save_checkpoints_steps(40),
            vec![25, 65, 105, 125],
        ),
        (
            RunConfig::new(dir.path()).with_save_checkpoints_secs(60),
            vec![25, 125],
        ),
    ] {
        let mut sync = Replica {
            rank: 1,
            shared: Vec::new(),
        };
        let mut own = WorkerPositions::new(&config, 1, false);
        let mut data = input();
        let restored = checkpoint(25, 0, Some((20, [0, 20])));
        own.resume(&mut sync, &mut data, Some(restored), 25, true)
            .unwrap();
        for step in 26..=130 {
            own.after_step(&mut sync, step, Instant::now(), &|| Position::Index(step))
                .unwrap();
        }
        let steps: Vec<u64> = sync.shared.iter().map(|(s, _)| *s).collect();
        assert_eq!(steps, expected);
        assert!(
            !dir.path().join(POSITIONS_DIR).exists(),
            "a synchronous worker writes nothing"
        );
    }
}

#[test]
fn a_parameter_server_worker_reads_on_from_its_own_latest_position() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig::new(dir.path()).with_save_checkpoints_steps(10);
    let mut sync = Replica {
        rank: 1,
        shared: Vec::new(),
    };
    let mut own = WorkerPositions::new(&config, 1, false);
    let mut data = input();
    own.resume(&mut sync, &mut data, None, 0, true).unwrap();
    for step in 1..=37 {
        data.next_item().unwrap().unwrap();
        own.after_step(&mut sync, step, Instant::now(), &|| data.position())
            .unwrap();
    }
    // Recorded at 30: the restarted worker reads on from there.
    assert_eq!(resumed(&config, 1, None).0, 30);
    own.finish(37, &|| data.position());
    assert_eq!(resumed(&config, 1, None).0, 37);
    // An unreadable file starts the input from its beginning.
    std::fs::write(positions_path(dir.path(), 1), r#"{"global_step": 1}"#).unwrap();
    assert_eq!(resumed(&config, 1, None).0, 0);
}
