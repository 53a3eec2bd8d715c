//! Tests of the checkpoint manager: retention, pinning, recovery from half-written or stale files.

use super::*;
use serde_json::json;
use std::fs;

fn ckpt(step: u64) -> Checkpoint {
    Checkpoint::new(step, json!({"step": step, "optimizer": "sgd"}))
        .with_section("model", vec![step as u8; 64])
        .with_section("optimizer", vec![!(step as u8); 32])
}

fn steps(manager: &CheckpointManager) -> Vec<u64> {
    manager
        .list()
        .unwrap()
        .iter()
        .map(|p| parse_checkpoint_file_name(p.file_name().unwrap().to_str().unwrap()).unwrap())
        .collect()
}

fn files_on_disk(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn latest_step_loaded(manager: &CheckpointManager) -> Option<u64> {
    manager.latest().unwrap().map(|(path, c)| {
        assert_eq!(path, checkpoint_path(manager.model_dir(), c.global_step));
        c.global_step
    })
}

fn truncate(path: &Path, keep: usize) {
    let bytes = fs::read(path).unwrap();
    fs::write(path, &bytes[..keep.min(bytes.len())]).unwrap();
}

#[test]
fn empty_or_missing_model_dir_has_no_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    for model_dir in [dir.path().to_path_buf(), dir.path().join("not-yet")] {
        let manager = CheckpointManager::new(model_dir, Some(3));
        assert!(manager.latest().unwrap().is_none());
        assert_eq!(manager.latest_step().unwrap(), None);
        assert!(manager.list().unwrap().is_empty());
    }
}

#[test]
fn save_then_latest_round_trips_and_creates_the_dir() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path().join("model"), None);
    for step in [100, 200, 300] {
        let path = manager.save(&ckpt(step)).unwrap();
        assert_eq!(path, checkpoint_path(dir.path().join("model"), step));
    }
    let (path, loaded) = manager.latest().unwrap().unwrap();
    assert_eq!(path, dir.path().join("model/ckpt-300.ckpt"));
    assert_eq!(loaded, ckpt(300));
    assert_eq!(manager.latest_step().unwrap(), Some(300));
    assert_eq!(steps(&manager), [100, 200, 300]);
    assert_eq!(manager.load_step(200).unwrap(), ckpt(200));
    let index = CheckpointIndex::read(manager.model_dir()).unwrap().unwrap();
    assert_eq!(index.latest.as_deref(), Some("ckpt-300.ckpt"));
    assert_eq!(
        index.all,
        ["ckpt-100.ckpt", "ckpt-200.ckpt", "ckpt-300.ckpt"]
    );
    // No temp files left behind.
    assert_eq!(
        files_on_disk(manager.model_dir()),
        [
            "checkpoint",
            "ckpt-100.ckpt",
            "ckpt-200.ckpt",
            "ckpt-300.ckpt"
        ]
    );
}

#[test]
fn resaving_a_step_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(5));
    manager.save(&ckpt(100)).unwrap();
    let mut again = ckpt(100);
    again.meta = json!({"second": true});
    manager.save(&again).unwrap();
    assert_eq!(steps(&manager), [100]);
    assert_eq!(manager.latest().unwrap().unwrap().1, again);
}

#[test]
fn retention_keeps_the_last_n() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(2));
    for step in 1..=5 {
        manager.save(&ckpt(step * 10)).unwrap();
    }
    assert_eq!(steps(&manager), [40, 50]);
    assert_eq!(
        files_on_disk(dir.path()),
        ["checkpoint", "ckpt-40.ckpt", "ckpt-50.ckpt"]
    );
}

#[test]
fn checkpoints_kept_every_n_hours_leave_the_index_and_stay_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    // A few microseconds: every save is far enough after the one before to be kept.
    let manager =
        CheckpointManager::new(dir.path(), Some(2)).with_keep_checkpoint_every_n_hours(Some(1e-9));
    for step in 1..=5 {
        manager.save(&ckpt(step * 10)).unwrap();
    }
    assert_eq!(steps(&manager), [40, 50]);
    let on_disk = [
        "checkpoint",
        "ckpt-10.ckpt",
        "ckpt-20.ckpt",
        "ckpt-30.ckpt",
        "ckpt-40.ckpt",
    ];
    assert_eq!(files_on_disk(dir.path())[..5], on_disk);
    assert_eq!(files_on_disk(dir.path()).len(), 6);
    let index = CheckpointIndex::read(dir.path()).unwrap().unwrap();
    let kept_at = index.last_preserved_timestamp.expect("recorded");
    let saved_40 = index.timestamps[0];
    assert!(
        kept_at > 0.0 && kept_at < saved_40,
        "{kept_at} vs {saved_40}"
    );

    // A later run goes on from the index's record: one saved too soon after it is deleted.
    let mut index = index;
    index.last_preserved_timestamp = Some(kept_at + 1e9);
    index.write(dir.path()).unwrap();
    let resumed =
        CheckpointManager::new(dir.path(), Some(2)).with_keep_checkpoint_every_n_hours(Some(1e-9));
    resumed.save(&ckpt(60)).unwrap();
    assert_eq!(steps(&resumed), [50, 60]);
    assert!(!dir.path().join("ckpt-40.ckpt").exists());
    assert_eq!(latest_step_loaded(&resumed), Some(60));
    // Without the option, nothing is kept for good and the index holds no such record.
    let plain = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(plain.path(), Some(1));
    for step in 1..=3 {
        manager.save(&ckpt(step)).unwrap();
    }
    assert_eq!(files_on_disk(plain.path()), ["checkpoint", "ckpt-3.ckpt"]);
    let index = fs::read_to_string(plain.path().join("checkpoint")).unwrap();
    assert!(!index.contains("last_preserved"), "{index}");
}

#[test]
fn keep_max_zero_or_none_keeps_everything() {
    for keep_max in [None, Some(0)] {
        let dir = tempfile::tempdir().unwrap();
        let manager = CheckpointManager::new(dir.path(), keep_max);
        for step in 1..=4 {
            manager.save(&ckpt(step)).unwrap();
        }
        assert_eq!(steps(&manager), [1, 2, 3, 4]);
    }
}

#[test]
fn retention_never_deletes_a_pinned_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(2));
    let evaluator = manager.clone();
    manager.save(&ckpt(1)).unwrap();
    let pinned = manager.save(&ckpt(2)).unwrap();
    evaluator.pin(&pinned);
    evaluator.pin(&pinned);
    for step in 3..=5 {
        manager.save(&ckpt(step)).unwrap();
    }
    assert_eq!(steps(&manager), [2, 4, 5]);
    assert_eq!(evaluator.load(&pinned).unwrap(), ckpt(2));
    assert!(evaluator.unpin(&pinned));
    manager.save(&ckpt(6)).unwrap();
    assert_eq!(steps(&manager), [2, 5, 6], "still pinned once");
    assert!(evaluator.unpin(&pinned));
    assert!(!evaluator.unpin(&pinned));
    manager.save(&ckpt(7)).unwrap();
    assert_eq!(steps(&manager), [6, 7]);
    assert!(!pinned.exists());
}

#[test]
fn falls_back_when_the_latest_is_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), None);
    for step in [100, 200, 300] {
        manager.save(&ckpt(step)).unwrap();
    }
    let p300 = checkpoint_path(dir.path(), 300);
    for keep in [0, 5, 30, 200] {
        truncate(&p300, keep);
        assert_eq!(
            latest_step_loaded(&manager),
            Some(200),
            "truncated to {keep}"
        );
    }
    // A flipped byte, and a missing file, also fall back.
    let mut bytes = ckpt(300).encode();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    fs::write(&p300, bytes).unwrap();
    assert_eq!(latest_step_loaded(&manager), Some(200));
    fs::remove_file(&p300).unwrap();
    assert_eq!(latest_step_loaded(&manager), Some(200));
    // The cheap step query only looks at the index.
    assert_eq!(manager.latest_step().unwrap(), Some(300));
}

#[test]
fn falls_back_to_a_scan_when_the_index_is_deleted_or_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(10));
    for step in [100, 900, 300] {
        manager.save(&ckpt(step)).unwrap();
    }
    let index = CheckpointIndex::path(dir.path());
    fs::remove_file(&index).unwrap();
    assert_eq!(latest_step_loaded(&manager), Some(900), "newest step first");
    assert_eq!(manager.latest_step().unwrap(), Some(900));
    assert_eq!(steps(&manager), [100, 300, 900]);

    fs::write(&index, b"{\"latest\": \"ckpt-").unwrap();
    assert_eq!(latest_step_loaded(&manager), Some(900));
    truncate(&checkpoint_path(dir.path(), 900), 40);
    assert_eq!(latest_step_loaded(&manager), Some(300));

    // The next save rebuilds the index from the files.
    manager.save(&ckpt(1000)).unwrap();
    let rebuilt = CheckpointIndex::read(dir.path()).unwrap().unwrap();
    assert_eq!(
        rebuilt.all,
        [
            "ckpt-100.ckpt",
            "ckpt-300.ckpt",
            "ckpt-900.ckpt",
            "ckpt-1000.ckpt"
        ]
    );
}

#[test]
fn crash_between_file_and_index_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(2));
    manager.save(&ckpt(100)).unwrap();
    manager.save(&ckpt(200)).unwrap();
    let index_before = fs::read(CheckpointIndex::path(dir.path())).unwrap();
    // The process dies after writing ckpt-300 but before updating the index.
    write_atomic(&checkpoint_path(dir.path(), 300), &ckpt(300).encode()).unwrap();
    assert_eq!(
        fs::read(CheckpointIndex::path(dir.path())).unwrap(),
        index_before
    );

    assert_eq!(latest_step_loaded(&manager), Some(300));
    assert_eq!(manager.latest_step().unwrap(), Some(300));
    assert_eq!(steps(&manager), [100, 200, 300]);

    // If that file is damaged after all, the index's latest is used.
    truncate(&checkpoint_path(dir.path(), 300), 100);
    assert_eq!(latest_step_loaded(&manager), Some(200));
    write_atomic(&checkpoint_path(dir.path(), 300), &ckpt(300).encode()).unwrap();

    // The next save adopts the orphan into the index, and so into retention.
    manager.save(&ckpt(400)).unwrap();
    assert_eq!(steps(&manager), [300, 400]);
    assert_eq!(
        files_on_disk(dir.path()),
        ["checkpoint", "ckpt-300.ckpt", "ckpt-400.ckpt"]
    );
}

#[test]
fn stale_files_older_than_the_index_are_a_last_resort_only() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(1));
    manager.save(&ckpt(100)).unwrap();
    manager.save(&ckpt(200)).unwrap();
    // A crash between the index write and the deletion left ckpt-50 behind.
    write_atomic(&checkpoint_path(dir.path(), 50), &ckpt(50).encode()).unwrap();
    assert_eq!(steps(&manager), [200]);
    assert_eq!(latest_step_loaded(&manager), Some(200));
    truncate(&checkpoint_path(dir.path(), 200), 10);
    assert_eq!(latest_step_loaded(&manager), Some(50));
}

#[test]
fn no_readable_checkpoint_is_an_error_not_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), None);
    manager.save(&ckpt(100)).unwrap();
    manager.save(&ckpt(200)).unwrap();
    truncate(&checkpoint_path(dir.path(), 100), 3);
    fs::write(checkpoint_path(dir.path(), 200), b"garbage garbage garbage").unwrap();
    let err = manager.latest().unwrap_err().to_string();
    assert!(
        err.contains("none of its 2 checkpoints can be read"),
        "{err}"
    );
    assert!(
        err.contains("ckpt-200.ckpt: not a checkpoint file (bad magic bytes)"),
        "{err}"
    );
    assert!(err.contains("ckpt-100.ckpt: file is truncated"), "{err}");
}

#[test]
fn load_checks_the_step_in_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), None);
    let wrong = checkpoint_path(dir.path(), 6);
    fs::write(&wrong, ckpt(5).encode()).unwrap();
    let err = manager.load(&wrong).unwrap_err().to_string();
    assert!(
        err.contains("file name says step 6 but its header says 5"),
        "{err}"
    );
    // Any other name (e.g. a copied warm-start file) is not checked.
    let other = dir.path().join("warm-start.bin");
    fs::write(&other, ckpt(5).encode()).unwrap();
    assert_eq!(manager.load(&other).unwrap(), ckpt(5));
    let missing = manager
        .load(dir.path().join("nope.ckpt"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("nope.ckpt"), "{missing}");
}

#[test]
fn concurrent_saves_keep_a_consistent_index() {
    let dir = tempfile::tempdir().unwrap();
    let manager = CheckpointManager::new(dir.path(), Some(3));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let manager = manager.clone();
            s.spawn(move || {
                for i in 0..5 {
                    manager.save(&ckpt(1 + t * 100 + i)).unwrap();
                }
            });
        }
    });
    let index = CheckpointIndex::read(dir.path()).unwrap().unwrap();
    assert_eq!(index.all.len(), 3);
    assert!(index.fault().is_none());
    let mut on_disk = files_on_disk(dir.path());
    on_disk.retain(|n| n != "checkpoint");
    let mut listed = index.all.clone();
    listed.sort();
    assert_eq!(on_disk, listed);
}
