//! Many files read by a worker of a cluster resume exactly: for FILE and DATA sharding,
//! files read one after another or interleaved, rows shuffled or not, CSV and TFRecord,
//! a pipeline restored from the position taken after any number of rows yields exactly
//! the rows an uninterrupted one yields after them — at a file's end and an epoch's too.

use std::path::Path;

use datasets::{
    AutoShardPolicy, BoxDataset, CsvDataset, DatasetExt, Error, InputFiles, Position, Schema,
    TfRecordCompression, TfRecordDataset, TfRecordWriter,
};
use proptest::prelude::*;

/// The value of row `row` of file `file`: which file and row it was is read back from it.
fn value(file: usize, row: usize) -> u64 {
    (1000 * file + row) as u64
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Csv,
    TfRecord,
}

/// Files `part-0…` in `dir`, file `i` holding `rows[i]` rows; every other TFRecord file is
/// GZIP-compressed, so that restoring reads a compressed file up to its position.
fn write_files(dir: &Path, format: Format, rows: &[usize]) -> InputFiles {
    for (file, &n) in rows.iter().enumerate() {
        match format {
            Format::Csv => {
                let body: String = (0..n).map(|r| format!("{},1\n", value(file, r))).collect();
                std::fs::write(dir.join(format!("part-{file}.csv")), format!("x,y\n{body}"))
                    .unwrap();
            }
            Format::TfRecord => {
                let (name, compression) = match file % 2 {
                    0 => (format!("part-{file}.tfrecord"), TfRecordCompression::None),
                    _ => (
                        format!("part-{file}.tfrecord.gz"),
                        TfRecordCompression::Gzip,
                    ),
                };
                let mut writer = TfRecordWriter::create(dir.join(name), compression).unwrap();
                for r in 0..n {
                    writer.write_record(&value(file, r).to_le_bytes()).unwrap();
                }
                writer.finish().unwrap();
            }
        }
    }
    InputFiles::resolve(&format!("{}/part-*", dir.display())).unwrap()
}

/// How one worker reads its share.
#[derive(Clone, Copy, Debug)]
struct Plan {
    format: Format,
    policy: AutoShardPolicy,
    workers: usize,
    rank: usize,
    cycle_length: usize,
    block_length: usize,
    /// Rows shuffled through a buffer of this size after sharding (0: in file order).
    shuffle: usize,
    epochs: usize,
}

/// Worker `plan.rank`'s pipeline: its files interleaved, its rows of them, shuffled and
/// repeated — as `dnn-classifier` builds its training input.
fn pipeline(files: &InputFiles, plan: Plan) -> BoxDataset<u64> {
    let share = files
        .for_worker(plan.policy, plan.workers, plan.rank)
        .unwrap();
    let read = |open| {
        (share.files.read(plan.cycle_length, plan.block_length, open))
            .shard(share.rows.0, share.rows.1)
            .boxed()
    };
    let rows: BoxDataset<u64> = match plan.format {
        Format::Csv => read(Box::new(|path: &Path| {
            let schema = Schema::new().float("x").int("y").label("y");
            let rows = CsvDataset::open(path, schema)?;
            Ok(rows.map(|row| row.dense[0] as u64).boxed())
        })
            as Box<dyn FnMut(&Path) -> Result<BoxDataset<u64>, Error> + Send>),
        Format::TfRecord => read(Box::new(|path: &Path| {
            let records = TfRecordDataset::open([path])?;
            Ok(records
                .map(|r| u64::from_le_bytes(r[..8].try_into().unwrap()))
                .boxed())
        })),
    };
    let rows = match plan.shuffle {
        0 => rows,
        buffer => rows.shuffle(buffer, 7).boxed(),
    };
    rows.repeat(Some(plan.epochs)).boxed()
}

/// Asserts that after every prefix of an uninterrupted run, a fresh pipeline restored from
/// the position (through JSON, as checkpoints store it) yields exactly the rest.
fn assert_resumes_exactly(files: &InputFiles, plan: Plan) {
    let full: Vec<u64> = pipeline(files, plan).iter().map(Result::unwrap).collect();
    for k in 0..=full.len() {
        let mut first = pipeline(files, plan);
        first.iter().take(k).for_each(|row| {
            row.unwrap();
        });
        let saved = Position::from_json(&first.position().to_json()).unwrap();
        let mut resumed = pipeline(files, plan);
        resumed.restore(&saved).unwrap();
        let rest: Vec<u64> = resumed.iter().map(Result::unwrap).collect();
        assert_eq!(rest, full[k..], "{plan:?} after {k} rows");
    }
}

#[test]
fn every_sharding_interleaving_and_shuffle_resumes_exactly() {
    for format in [Format::Csv, Format::TfRecord] {
        let dir = tempfile::tempdir().unwrap();
        // An empty file among them, and files of different lengths.
        let files = write_files(dir.path(), format, &[3, 0, 4, 2, 5]);
        for policy in [AutoShardPolicy::File, AutoShardPolicy::Data] {
            for cycle_length in [1, 2] {
                for shuffle in [0, 3] {
                    for rank in 0..2 {
                        let plan = Plan {
                            format,
                            policy,
                            workers: 2,
                            rank,
                            cycle_length,
                            block_length: 1,
                            shuffle,
                            epochs: 2,
                        };
                        assert_resumes_exactly(&files, plan);
                    }
                }
            }
        }
    }
}

#[test]
fn a_restore_at_a_file_end_or_an_epoch_end_goes_on_with_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), Format::Csv, &[2, 1, 3, 2]);
    let plan = Plan {
        format: Format::Csv,
        policy: AutoShardPolicy::File,
        workers: 2,
        rank: 0,
        cycle_length: 1,
        block_length: 1,
        shuffle: 0,
        epochs: 2,
    };
    // Worker 0 reads files 0 and 2, one after the other, twice.
    let resumed_after = |k: usize| {
        let mut first = pipeline(&files, plan);
        first.iter().take(k).for_each(drop);
        let mut resumed = pipeline(&files, plan);
        resumed.restore(&first.position()).unwrap();
        resumed.iter().map(Result::unwrap).collect::<Vec<u64>>()
    };
    assert_eq!(resumed_after(2), [2000, 2001, 2002, 0, 1, 2000, 2001, 2002]);
    assert_eq!(resumed_after(5), [0, 1, 2000, 2001, 2002]);
    assert_eq!(resumed_after(10), [] as [u64; 0]);
    // At an epoch's end the position is that epoch's last row; one row on, the next
    // epoch's first.
    let epoch_after = |k: usize| {
        let mut first = pipeline(&files, plan);
        first.iter().take(k).for_each(drop);
        match first.position() {
            Position::Repeat {
                epoch, in_epoch, ..
            } => (epoch, in_epoch),
            other => panic!("not a repeat position: {other:?}"),
        }
    };
    assert_eq!((epoch_after(5), epoch_after(6)), ((0, 5), (1, 1)));
}

/// Rows per file, the cycle and block lengths, the workers and the shuffle buffer.
fn plans() -> impl Strategy<Value = (Vec<usize>, Plan)> {
    let sizes = prop::collection::vec(0usize..5, 2..6);
    let shape = (
        1usize..4,
        1usize..3,
        1usize..3,
        prop::bool::ANY,
        0usize..3,
        1usize..3,
    );
    (sizes, shape, prop::bool::ANY).prop_map(
        |(sizes, (cycle, block, workers, file, shuffle, epochs), tfrecord)| {
            let policy = match file && workers <= sizes.len() {
                true => AutoShardPolicy::File,
                false => AutoShardPolicy::Data,
            };
            let plan = Plan {
                format: if tfrecord {
                    Format::TfRecord
                } else {
                    Format::Csv
                },
                policy,
                workers,
                rank: workers - 1,
                cycle_length: cycle,
                block_length: block,
                shuffle,
                epochs,
            };
            (sizes, plan)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn any_file_layout_resumes_exactly((sizes, plan) in plans()) {
        let dir = tempfile::tempdir().unwrap();
        let files = write_files(dir.path(), plan.format, &sizes);
        assert_resumes_exactly(&files, plan);
    }
}
