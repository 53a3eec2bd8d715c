//! Exports and evaluations while their directory is removed under them: a write cut short
//! by the removal says that the directory was removed, not which of its files vanished.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use estimator::{Error, EstimatorExt, Result, TrainSpec};

use crate::support::{eval_input, train_input, TinyClassifier};

/// Runs `write` (into `dir`) again and again while another thread removes `dir`, until three
/// runs were cut short or 5 s passed. Every run must succeed or report the removal of `dir`:
/// one before the lock was taken is either nothing (the directory is made again) or the
/// removal too; never an error about a file in it.
fn writes_under_removal(dir: &Path, mut write: impl FnMut() -> Result<()>) {
    let done = AtomicBool::new(false);
    let (mut written, mut removals, mut other) = (0, 0, Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let _ = std::fs::remove_dir_all(dir);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) && removals < 3 {
            match write() {
                Ok(()) => written += 1,
                Err(Error::DirGone { dir: gone }) => {
                    assert_eq!(gone, dir);
                    removals += 1;
                }
                Err(e) => other.push(e.to_string()),
            }
        }
        done.store(true, Ordering::SeqCst);
    });
    assert!(other.is_empty(), "{other:?}");
    assert!(removals > 0, "no write was cut short ({written} written)");
}

#[test]
fn an_export_whose_directory_is_removed_under_it_reports_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(&dir.path().join("model"));
    est.train(train_input, TrainSpec::max_steps(5)).unwrap();
    let base = dir.path().join("export");
    writes_under_removal(&base, || est.export(&base).map(drop));
}

#[test]
fn an_evaluation_whose_directory_is_removed_under_it_reports_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let est = TinyClassifier::new(&model);
    est.train(train_input, TrainSpec::max_steps(5)).unwrap();
    let eval_dir = model.join("eval");
    writes_under_removal(&eval_dir, || {
        est.evaluate(eval_input, Some(1), None, None).map(drop)
    });
}
