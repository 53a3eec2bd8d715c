//! Exports and evaluations while their directory is removed under them: a write cut short
//! by the removal says that the directory was removed, not which of its files vanished.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use estimator::{Error, EstimatorExt, TrainSpec};

use crate::support::{eval_input, train_input, TinyClassifier};

#[test]
fn an_export_whose_directory_is_removed_under_it_reports_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let est = TinyClassifier::new(&dir.path().join("model"));
    est.train(train_input, TrainSpec::max_steps(5)).unwrap();
    let base = dir.path().join("export");
    let done = AtomicBool::new(false);
    let (mut exported, mut removals, mut other) = (0, 0, Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let _ = std::fs::remove_dir_all(&base);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) && removals < 3 {
            match est.export(&base) {
                Ok(_) => exported += 1,
                Err(Error::DirGone { dir }) => {
                    assert_eq!(dir, base);
                    removals += 1;
                }
                Err(e) => other.push(e.to_string()),
            }
        }
        done.store(true, Ordering::SeqCst);
    });
    // A removal before the export took the directory's lock is either nothing (the
    // directory is made again) or the removal too; never an error about a file in it.
    assert!(other.is_empty(), "{other:?}");
    assert!(
        removals > 0,
        "no export was cut short by the removal ({exported} exported, errors {other:?})"
    );
}

#[test]
fn an_evaluation_whose_directory_is_removed_under_it_reports_the_removal() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let est = TinyClassifier::new(&model);
    est.train(train_input, TrainSpec::max_steps(5)).unwrap();
    let eval_dir = model.join("eval");
    let done = AtomicBool::new(false);
    let (mut evaluated, mut removals, mut other) = (0, 0, Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let _ = std::fs::remove_dir_all(&eval_dir);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) && removals < 3 {
            match est.evaluate(eval_input, Some(1), None, None) {
                Ok(_) => evaluated += 1,
                Err(Error::DirGone { dir }) => {
                    assert_eq!(dir, eval_dir);
                    removals += 1;
                }
                Err(e) => other.push(e.to_string()),
            }
        }
        done.store(true, Ordering::SeqCst);
    });
    assert!(other.is_empty(), "{other:?}");
    assert!(
        removals > 0,
        "no evaluation was cut short by the removal ({evaluated} evaluated, errors {other:?})"
    );
}
