//! Every evaluation's results, appended as JSON lines to `eval_dir/history.jsonl`.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::sync_parent_dir;

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
    #[serde(deserialize_with = "metrics_or_nan")]
    pub metrics: BTreeMap<String, f64>,
}

/// The metrics of a record, a `null` read as NaN: JSON has no NaN or infinity, so serde_json
/// writes a diverged evaluation's values as `null`, and refusing them would drop the record.
fn metrics_or_nan<'de, D>(deserializer: D) -> std::result::Result<BTreeMap<String, f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let metrics = BTreeMap::<String, Option<f64>>::deserialize(deserializer)?;
    Ok(metrics
        .into_iter()
        .map(|(name, value)| (name, value.unwrap_or(f64::NAN)))
        .collect())
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
            .read(true)
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        // A torn last line (a crash while appending) gets its end here: appended to it, this
        // record would be one unreadable line with it, and lost.
        let mut last = [b'\n'];
        if len > 0 {
            file.read_exact_at(&mut last, len - 1)
                .map_err(|e| Error::io(&path, e))?;
        }
        if last[0] != b'\n' {
            line.insert(0, '\n');
        }
        file.write_all(line.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|e| Error::io(&path, e))?;
        if len == 0 {
            // A new file's directory entry, synced like its first record.
            sync_parent_dir(&path);
        }
        Ok(())
    }

    /// Every complete record so far; a missing file is an empty history, and a torn last
    /// line (a crash while appending) is ignored.
    pub fn read(eval_dir: &Path) -> Result<Vec<EvalRecord>> {
        let path = Self::path(eval_dir);
        // Lossy: a line torn inside a character is not UTF-8, and must not fail the rest.
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        // The last line is torn when the file does not end with a line end.
        let last = text.lines().count().saturating_sub(1);
        let torn = (!text.ends_with('\n')).then_some(last);
        let parse = |(i, line): (usize, &str)| match serde_json::from_str(line) {
            Ok(record) => Some(record),
            // Only a torn last line is expected; another is skipped, but not silently.
            Err(e) if Some(i) != torn && !line.trim().is_empty() => {
                tracing::warn!("{}: line {}: skipped: {e}", path.display(), i + 1);
                None
            }
            Err(_) => None,
        };
        Ok(text.lines().enumerate().filter_map(parse).collect())
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

    #[test]
    fn a_non_finite_metric_reads_back_as_nan_keeping_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let record = |step, loss| EvalRecord {
            global_step: step,
            metrics: [("loss".into(), loss), ("accuracy".into(), 0.5)].into(),
        };
        EvalHistory::append(dir.path(), &record(10, f64::NAN)).unwrap();
        EvalHistory::append(dir.path(), &record(20, f64::INFINITY)).unwrap();
        EvalHistory::append(dir.path(), &record(30, 0.25)).unwrap();
        let read = EvalHistory::read(dir.path()).unwrap();
        let steps: Vec<u64> = read.iter().map(|r| r.global_step).collect();
        assert_eq!(steps, [10, 20, 30]);
        assert!(read[0].metrics["loss"].is_nan() && read[1].metrics["loss"].is_nan());
        assert_eq!(read[2], record(30, 0.25));
    }

    #[test]
    fn a_record_appended_after_a_torn_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let record = |step| EvalRecord {
            global_step: step,
            metrics: [("loss".into(), 0.5), ("pr\u{e9}cision".into(), 0.75)].into(),
        };
        EvalHistory::append(dir.path(), &record(10)).unwrap();
        // A crash mid-append: the line ends inside the two bytes of the "é".
        let whole = serde_json::to_string(&record(20)).unwrap();
        let cut = whole.find('\u{e9}').unwrap() + 1;
        let mut f = OpenOptions::new()
            .append(true)
            .open(EvalHistory::path(dir.path()))
            .unwrap();
        f.write_all(&whole.as_bytes()[..cut]).unwrap();
        assert_eq!(EvalHistory::read(dir.path()).unwrap(), [record(10)]);
        EvalHistory::append(dir.path(), &record(30)).unwrap();
        assert_eq!(
            EvalHistory::read(dir.path()).unwrap(),
            [record(10), record(30)]
        );
    }
}
