//! [`InputFiles`]: the files a pipeline reads, each worker's share of them, and reading
//! them one after another or interleaved.

use std::path::{Path, PathBuf};

use super::pattern::expand;
use super::AutoShardPolicy;
use crate::combinators::{Inputs, Interleave};
use crate::{Dataset, Error};

/// A list of input files in reading order, never empty and without repeats: from a list of
/// paths and globs ([`resolve`](Self::resolve)) or from paths ([`new`](Self::new)).
///
/// ```
/// use datasets::{AutoShardPolicy, CsvDataset, Dataset, DatasetExt, InputFiles, Schema};
///
/// let dir = tempfile::tempdir().unwrap();
/// for i in 0..4 {
///     let rows: String = (0..3).map(|r| format!("{},{}\n", 10 * i + r, i)).collect();
///     std::fs::write(dir.path().join(format!("part-{i}.csv")), format!("x,label\n{rows}")).unwrap();
/// }
/// let files = InputFiles::resolve(&format!("{}/part-*.csv", dir.path().display()))?;
/// assert_eq!(files.len(), 4);
///
/// // Worker 1 of 2 reads files 1 and 3, two at a time, a row from each in turn.
/// let share = files.for_worker(AutoShardPolicy::Auto, 2, 1)?;
/// assert_eq!(share.policy, AutoShardPolicy::File);
/// let schema = Schema::new().float("x").int("label").label("label");
/// let mut rows = share
///     .files
///     .read(2, 1, |path| CsvDataset::open(path, schema.clone()))
///     .shard(share.rows.0, share.rows.1);
/// let x: Vec<f32> = rows.iter().map(|r| r.unwrap().dense[0]).collect();
/// assert_eq!(x, [10.0, 30.0, 11.0, 31.0, 12.0, 32.0]);
/// # Ok::<(), datasets::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFiles {
    paths: Vec<PathBuf>,
}

/// One worker's share of some [`InputFiles`], from [`InputFiles::for_worker`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerShare {
    /// The files this worker opens.
    pub files: InputFiles,
    /// The policy that applied: `File`, `Data` or `Off` (`Auto` resolved).
    pub policy: AutoShardPolicy,
    /// The rows of those files it keeps, as `shard(num_shards, index)`'s arguments: `(1, 0)`
    /// (every row) unless the policy is `Data`.
    pub rows: (usize, usize),
}

impl InputFiles {
    /// The files `list` names: comma-separated paths and globs (`data/train-*`, `**` for any
    /// directories), each glob's matches sorted by path. A glob that matches nothing, an
    /// empty entry or a file named twice is an error naming it; a path without wildcards is
    /// taken as it is (opening it says whether it exists).
    pub fn resolve(list: &str) -> Result<Self, Error> {
        InputFiles::new(expand(list)?)
    }

    /// `paths`, in this order; none, or one named twice, is an error.
    pub fn new<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> Result<Self, Error> {
        let paths: Vec<PathBuf> = paths.into_iter().map(Into::into).collect();
        if paths.is_empty() {
            return Err(Error::InvalidArgument("no input files".into()));
        }
        if let Some((i, _)) = (paths.iter().enumerate()).find(|(i, p)| paths[..*i].contains(p)) {
            return Err(Error::InvalidArgument(format!(
                "{} is named twice in the input files: every file must be read once",
                paths[i].display()
            )));
        }
        Ok(InputFiles { paths })
    }

    /// The files, in reading order.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The first file (the one a schema is inferred from).
    pub fn first(&self) -> &Path {
        &self.paths[0]
    }

    /// Number of files (at least 1).
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Always `false`: a list holds at least one file.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The share of worker `index` of `workers` under `policy` ([`AutoShardPolicy::resolve`]):
    /// under `File` file `i` goes to worker `i % workers`; under `Data` and `Off` every
    /// worker opens every file, and under `Data` keeps every `workers`-th row from its
    /// index on.
    pub fn for_worker(
        &self,
        policy: AutoShardPolicy,
        workers: usize,
        index: usize,
    ) -> Result<WorkerShare, Error> {
        let policy = policy.resolve(self.len(), workers)?;
        if index >= workers {
            return Err(Error::InvalidArgument(format!(
                "worker {index} of {workers}: the index must be below the number of workers"
            )));
        }
        Ok(match policy {
            AutoShardPolicy::File => WorkerShare {
                files: InputFiles {
                    paths: (self.paths.iter().skip(index).step_by(workers).cloned()).collect(),
                },
                policy,
                rows: (1, 0),
            },
            AutoShardPolicy::Data => WorkerShare {
                files: self.clone(),
                policy,
                rows: (workers, index),
            },
            _ => WorkerShare {
                files: self.clone(),
                policy,
                rows: (1, 0),
            },
        })
    }

    /// The items of every file, `open(path)` making each file's dataset when the cycle
    /// reaches it: `cycle_length` files read at a time, `block_length` items from each in
    /// turn, a file that ends replaced by the next (tf.data's `interleave`; `cycle_length`
    /// 1 reads the files one after another). The position says which files are open and
    /// where each stands, so a restored pipeline goes on in the same file at the same row.
    pub fn read<D, F>(
        &self,
        cycle_length: usize,
        block_length: usize,
        open: F,
    ) -> Interleave<FileInputs<F>>
    where
        D: Dataset,
        F: FnMut(&Path) -> Result<D, Error> + Send,
    {
        let inputs = FileInputs {
            paths: self.paths.clone(),
            open,
        };
        Interleave::new(inputs, cycle_length, block_length)
    }
}

/// Files as the inputs of an [`Interleave`], each opened by a function when its turn comes.
pub struct FileInputs<F> {
    paths: Vec<PathBuf>,
    open: F,
}

impl<F> FileInputs<F> {
    /// The files, in order.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl<D, F> Inputs for FileInputs<F>
where
    D: Dataset,
    F: FnMut(&Path) -> Result<D, Error> + Send,
{
    type Input = D;

    fn count(&self) -> usize {
        self.paths.len()
    }

    fn open(&mut self, index: usize) -> Result<D, Error> {
        (self.open)(&self.paths[index])
    }

    fn name(&self, index: usize) -> Option<String> {
        Some(self.paths[index].display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{from_vec, DatasetExt, Position, VecDataset};

    fn files(n: usize) -> InputFiles {
        InputFiles::new((0..n).map(|i| format!("f{i}"))).unwrap()
    }

    /// Rows of file `f{i}`: `i * 100 + row`, `rows` of them.
    fn open(rows: usize) -> impl FnMut(&Path) -> Result<VecDataset<usize>, Error> + Send {
        move |path: &Path| {
            let i: usize = path.to_str().unwrap()[1..].parse().unwrap();
            Ok(from_vec((0..rows).map(|r| i * 100 + r).collect()))
        }
    }

    #[test]
    fn file_sharding_gives_every_file_to_exactly_one_worker() {
        let all = files(8);
        let mut seen = Vec::new();
        for worker in 0..3 {
            let share = all.for_worker(AutoShardPolicy::File, 3, worker).unwrap();
            assert_eq!(share.rows, (1, 0));
            let names: Vec<_> = share
                .files
                .paths()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let expected: Vec<_> = (worker..8).step_by(3).map(|i| format!("f{i}")).collect();
            assert_eq!(names, expected);
            seen.extend(names);
        }
        seen.sort();
        assert_eq!(seen, (0..8).map(|i| format!("f{i}")).collect::<Vec<_>>());
        let data = all.for_worker(AutoShardPolicy::Auto, 9, 4).unwrap();
        assert_eq!(
            (data.policy, data.rows, data.files.len()),
            (AutoShardPolicy::Data, (9, 4), 8)
        );
        let off = all.for_worker(AutoShardPolicy::Off, 2, 1).unwrap();
        assert_eq!((off.rows, off.files), ((1, 0), all.clone()));
        assert!(all.for_worker(AutoShardPolicy::File, 2, 2).is_err());
        assert!(InputFiles::new(Vec::<PathBuf>::new()).is_err());
        assert!(InputFiles::new(["a", "b", "a"])
            .unwrap_err()
            .to_string()
            .contains("a is named twice"));
    }

    #[test]
    fn files_read_in_order_or_interleaved_and_resume_where_they_stood() {
        let sequential: Vec<usize> = files(3)
            .read(1, 1, open(2))
            .iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(sequential, [0, 1, 100, 101, 200, 201]);
        let interleaved: Vec<usize> = files(3)
            .read(2, 1, open(2))
            .iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(interleaved, [0, 100, 1, 101, 200, 201]);
        for (cycle, block) in [(1, 1), (2, 1), (2, 3), (3, 2)] {
            let full: Vec<usize> = files(3)
                .read(cycle, block, open(3))
                .iter()
                .map(Result::unwrap)
                .collect();
            for k in 0..=full.len() {
                let mut ds = files(3).read(cycle, block, open(3));
                ds.iter().take(k).for_each(drop);
                let position = ds.position();
                let mut resumed = files(3).read(cycle, block, open(3));
                resumed.restore(&position).unwrap();
                let rest: Vec<usize> = resumed.iter().map(Result::unwrap).collect();
                assert_eq!(rest, full[k..], "cycle {cycle} block {block} after {k}");
            }
        }
        // The position names the file each slot reads and where in it.
        let mut ds = files(3).read(1, 1, open(2));
        ds.iter().take(3).for_each(drop);
        let Position::Interleave {
            slot_inputs,
            inputs,
            opened,
            ..
        } = ds.position()
        else {
            panic!("not an interleave position");
        };
        assert_eq!(
            (slot_inputs, inputs, opened),
            (vec![1], vec![Position::Index(1)], Some(2))
        );
    }

    #[test]
    fn a_position_in_other_files_is_refused() {
        // Under FILE, worker 0 reads f0 and f2, worker 1 f1 and f3: worker 0's position in
        // its second file is no place in worker 1's.
        let all = files(4);
        let share = |worker| {
            all.for_worker(AutoShardPolicy::File, 2, worker)
                .unwrap()
                .files
        };
        let mut first = share(0).read(1, 1, open(3));
        first.iter().take(4).for_each(drop);
        let position = first.position();
        let mut second = share(1).read(1, 1, open(3));
        let error = second.restore(&position).unwrap_err().to_string();
        assert_eq!(
            error,
            "cannot restore position: interleave slot 0 read f2, but input 1 of this pipeline \
             is f3"
        );
        let rows: Vec<usize> = second.iter().map(Result::unwrap).collect();
        assert_eq!(rows, [100, 101, 102, 300, 301, 302]);
    }

    #[test]
    fn a_file_that_cannot_be_opened_ends_the_stream_with_its_error() {
        let mut ds = files(3).read(1, 1, |path: &Path| {
            if path == Path::new("f1") {
                Err(Error::InvalidArgument("f1 is bad".into()))
            } else {
                Ok(from_vec(vec![7]))
            }
        });
        assert_eq!(ds.next_item().unwrap().unwrap(), 7);
        assert_eq!(
            ds.next_item().unwrap().unwrap_err().to_string(),
            "invalid argument: f1 is bad"
        );
        assert!(ds.next_item().is_none());
    }
}
