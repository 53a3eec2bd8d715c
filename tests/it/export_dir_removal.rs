//! Exports while their directory is removed under them: an export cut short by the removal
//! says that the directory was removed, not which of its files vanished.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use estimator::{Error, EstimatorExt, TrainSpec};

use crate::support::{train_input, TinyClassifier};

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
    // A removal before the export took the directory's lock is an error about the directory
    // itself (or none: the directory is made again); never one about a file in a version.
    for error in &other {
        assert!(!error.contains(".tmp-"), "{error}");
        assert!(error.contains(base.to_str().unwrap()), "{error}");
    }
    assert!(
        removals > 0,
        "no export was cut short by the removal ({exported} exported, errors {other:?})"
    );
}
