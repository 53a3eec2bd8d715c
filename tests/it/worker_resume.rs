//! A synchronous cluster stopped mid-epoch and started again ends with the weights of an
//! uninterrupted run: every worker reads on where its own input stood — its own files
//! under FILE sharding, its own rows under DATA — not at the chief's position.

use std::path::Path;
use std::time::Duration;

use estimator::datasets::{
    AutoShardPolicy, CsvDataset, Dataset, DatasetExt, Error, Example, InputFiles, Label, Schema,
};
use estimator::distribute::{InMemoryTransport, Replica, Strategy};
use estimator::{EstimatorExt, OptimizerSpec, TrainSpec};

use crate::distributed::{classifier, max_abs_diff, weights};
use crate::support::examples;

const WORKERS: usize = 2;

/// The training rows in five CSV files of different lengths, so that the two replicas'
/// shares differ (110 and 130 rows under FILE) and so do their epochs.
fn write_parts(dir: &Path) -> InputFiles {
    let rows = examples();
    let mut start = 0;
    for (i, len) in [30, 60, 40, 70, 40].into_iter().enumerate() {
        let part = &rows[start..start + len];
        start += len;
        let mut text = String::from("f0,f1,f2,f3,label\n");
        for row in part {
            let Label::Class(class) = row.label else {
                panic!("a class label")
            };
            let cells: Vec<String> = row.dense.iter().map(f32::to_string).collect();
            text.push_str(&format!("{},{class}\n", cells.join(",")));
        }
        std::fs::write(dir.join(format!("part-{i}.csv")), text).unwrap();
    }
    InputFiles::resolve(&format!("{}/part-*.csv", dir.display())).unwrap()
}

/// Replica `rank`'s input: its share of the files, two read at a time, shuffled or not,
/// repeated, in batches of 8.
fn input(
    files: &InputFiles,
    policy: AutoShardPolicy,
    rank: usize,
    shuffle: bool,
) -> Result<impl Dataset<Item = Vec<Example>>, Error> {
    let share = files.for_worker(policy, WORKERS, rank)?;
    let schema = (0..4)
        .fold(Schema::new(), |s, i| s.float(format!("f{i}")))
        .int("label")
        .label("label");
    let rows = share
        .files
        .read(2, 1, move |path| CsvDataset::open(path, schema.clone()));
    let rows = rows.shard(share.rows.0, share.rows.1);
    let rows = match shuffle {
        true => rows.shuffle(16, 5).boxed(),
        false => rows.boxed(),
    };
    Ok(rows.repeat(None).batch(8, false))
}

/// How the replicas read: the policy and whether rows are shuffled.
type Reading = (AutoShardPolicy, bool);

/// Both replicas trained to `steps`, checkpoints every `every` steps.
fn train(model_dir: &Path, files: &InputFiles, reading: Reading, steps: u64, every: u64) {
    let names: Vec<String> = (0..WORKERS).map(|r| format!("worker:{r}")).collect();
    let transports = InMemoryTransport::cluster_with_timeout(WORKERS, Duration::from_secs(20));
    let handles: Vec<_> = (transports.into_iter().enumerate())
        .map(|(rank, transport)| {
            let mut estimator = classifier(model_dir, OptimizerSpec::adam(0.01));
            estimator.run_config =
                (estimator.run_config.clone()).with_save_checkpoints_steps(every);
            let replica = Replica::new(Box::new(transport), names.clone());
            let files = files.clone();
            std::thread::spawn(move || {
                estimator.train_with(
                    || input(&files, reading.0, rank, reading.1),
                    TrainSpec::max_steps(steps).with_auto_shard(false),
                    Strategy::MultiWorkerMirrored(replica),
                )
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().unwrap().global_step, steps);
    }
}

#[test]
fn a_cluster_restarted_mid_epoch_trains_the_weights_of_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_parts(dir.path());
    let policies = [AutoShardPolicy::File, AutoShardPolicy::Data];
    for reading in policies.into_iter().flat_map(|p| [(p, false), (p, true)]) {
        let name = format!("{}-{}", reading.0, reading.1);
        let whole = dir.path().join(format!("whole-{name}"));
        train(&whole, &files, reading, 20, 50);
        // Stopped mid-epoch, and between the replicas' epoch ends (at 14 and 17 batches
        // under FILE); checkpoints every 3 steps (the worker reads on from the last share)
        // or none but the final one (it reads on from where the run started).
        for (stop, every) in [(7, 3), (7, 50), (15, 50)] {
            let split = dir.path().join(format!("split-{name}-{stop}-{every}"));
            train(&split, &files, reading, stop, every);
            train(&split, &files, reading, 20, every);
            let diff = max_abs_diff(&weights(&split), &weights(&whole));
            assert!(
                diff <= 1e-6,
                "{reading:?}, stopped at {stop}, checkpoints every {every}: max |resumed - whole| = \
                 {diff}"
            );
        }
    }
}
