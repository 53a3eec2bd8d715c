//! Every evaluation's results, appended as JSON lines to `eval_dir/history.jsonl`.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The eval directory of an evaluation named `name` (TF: `eval` or `eval_<name>`).
pub fn eval_dir(model_dir: &Path, name: Option<&str>) -> PathBuf {
    match name {
        Some(name) => model_dir.join(format!("eval_{name}")),
        None => model_dir.join("eval"),
    }
}

/// One evaluation: the checkpoint's global step and the metric values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRecord {
    /// Global step of the evaluated checkpoint.
    pub global_step: u64,
    /// Metric values by name.
    pub metrics: BTreeMap<String, f64>,
}

/// Reads and appends the evaluation history of one eval directory.
pub struct EvalHistory;

impl EvalHistory {
    /// The history file of `eval_dir`.
    pub fn path(eval_dir: &Path) -> PathBuf {
        eval_dir.join("history.jsonl")
    }

    /// Appends `record` (one line, flushed and synced).
    pub fn append(eval_dir: &Path, record: &EvalRecord) -> Result<()> {
        let path = Self::path(eval_dir);
        let mut line = serde_json::to_string(record).map_err(|e| Error::json(&path, e))?;
        line.push('\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(line.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|e| Error::io(&path, e))
    }

    /// Every complete record so far; a missing file is an empty history, and a torn last
    /// line (a crash while appending) is ignored.
    pub fn read(eval_dir: &Path) -> Result<Vec<EvalRecord>> {
        let path = Self::path(eval_dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_and_reads_back_ignoring_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        assert!(EvalHistory::read(dir.path()).unwrap().is_empty());
        let r = EvalRecord {
            global_step: 10,
            metrics: [("loss".into(), 0.25)].into(),
        };
        EvalHistory::append(dir.path(), &r).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(EvalHistory::path(dir.path()))
            .unwrap();
        f.write_all(b"{\"global_step\": 2").unwrap();
        assert_eq!(EvalHistory::read(dir.path()).unwrap(), vec![r]);
    }
}
