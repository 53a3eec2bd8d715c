//! How a [`CsvDataset`](super::CsvDataset) reads: delimiter, bad-row policy, and the shared
//! count of skipped rows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What to do with a row that cannot be parsed (bad number, ragged row, empty cell
/// without a default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BadRowPolicy {
    /// Return the error (the caller may keep pulling; the row is lost either way).
    #[default]
    Fail,
    /// Skip the row and count it (see
    /// [`CsvDataset::skipped_rows`](super::CsvDataset::skipped_rows)).
    Skip,
}

/// Options for [`CsvDataset::open_with`](super::CsvDataset::open_with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field delimiter, `b','` by default.
    pub delimiter: u8,
    /// What to do with bad rows.
    pub bad_rows: BadRowPolicy,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            bad_rows: BadRowPolicy::Fail,
        }
    }
}

/// A shared count of rows, readable from any thread (e.g. after the dataset has moved into
/// a `prefetch` thread).
#[derive(Clone, Debug, Default)]
pub struct RowCounter(Arc<AtomicU64>);

impl RowCounter {
    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(super) fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }

    pub(super) fn increment(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
