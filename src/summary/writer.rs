//! [`SummaryWriter`]: one new TensorBoard events file per writer, never clobbering another.
//!
//! Records are framed by `tensorboard-rs`'s `RecordWriter`; the file itself is opened here with
//! `create_new`, because `tensorboard-rs` names its file after the current second, host and pid
//! only and truncates whatever file already has that name (two writers opened in one directory
//! within one second would clobber each other), and it panics on I/O errors in a background
//! thread. Write errors here never stop training: the first one is logged and disables the
//! writer, and [`SummaryWriter::try_flush`] reports it.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tensorboard_rs::record_writer::RecordWriter;

use super::event::{Event, EventKind, SessionStatus, SummaryValue, Value, FILE_VERSION};
use super::file_name::create_new_events_file;
use super::histogram::{histogram_buckets, Histogram};
use crate::error::{Error, Result};

/// Events written since the last flush that trigger a flush (TensorFlow's `max_queue`).
const MAX_PENDING_EVENTS: usize = 10;
/// Time since the last flush that triggers a flush on the next write (TensorFlow's
/// `flush_secs`).
const FLUSH_INTERVAL: Duration = Duration::from_secs(120);

/// One TensorBoard event writer per directory.
pub struct SummaryWriter {
    path: PathBuf,
    records: RecordWriter<BufWriter<File>>,
    pending: usize,
    last_flush: Instant,
    failed: Option<std::io::Error>,
}

impl std::fmt::Debug for SummaryWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummaryWriter")
            .field("path", &self.path)
            .field("pending", &self.pending)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl SummaryWriter {
    /// Creates `dir` if needed and a new events file in it, without touching existing ones;
    /// the file is named after this machine ([`crate::cluster::hostname`]).
    pub fn create(dir: &Path) -> Result<Self> {
        Self::create_on_host(dir, &crate::cluster::hostname())
    }

    /// [`create`](Self::create) with the file named after `host` (made file-name safe).
    pub fn create_on_host(dir: &Path, host: &str) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (path, file) = create_new_events_file(dir, now.as_secs(), host)?;
        let mut writer = SummaryWriter {
            path,
            records: RecordWriter::new(BufWriter::new(file)),
            pending: 0,
            last_flush: Instant::now(),
            failed: None,
        };
        writer.write(Event {
            wall_time: now.as_secs_f64(),
            step: 0,
            what: EventKind::FileVersion(FILE_VERSION.to_string()),
        });
        writer.try_flush()?;
        Ok(writer)
    }

    /// The events file this writer appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records the scalar `value` under `tag` at `step` (stored as `f32`, as TensorBoard does).
    pub fn scalar(&mut self, tag: &str, value: f64, step: u64) {
        self.summary(tag, Value::Simple(value as f32), step);
    }

    /// Records the histogram of `values` under `tag` at `step` (see [`histogram_buckets`]).
    pub fn histogram(&mut self, tag: &str, values: &[f32], step: u64) {
        self.summary(tag, Value::Histogram(histogram_buckets(values)), step);
    }

    /// Records a histogram already bucketed (e.g. on another thread) under `tag` at `step`.
    pub fn bucketed_histogram(&mut self, tag: &str, histogram: Histogram, step: u64) {
        self.summary(tag, Value::Histogram(histogram), step);
    }

    /// Records a `SessionLog START` at `step`: TensorBoard then drops the events of earlier runs
    /// at steps `>= step`; pass the first step this session writes (restored global step + 1).
    pub fn session_start(&mut self, step: u64) {
        self.event(EventKind::SessionLog(SessionStatus::Start), step);
    }

    /// Writes buffered events to the file; a failure is logged once and disables the writer.
    pub fn flush(&mut self) {
        if self.failed.is_some() {
            return;
        }
        match self.records.flush() {
            Ok(()) => {
                self.pending = 0;
                self.last_flush = Instant::now();
            }
            Err(e) => self.fail(e),
        }
    }

    /// Like [`flush`](Self::flush), but returns the first write error this writer met, if any.
    pub fn try_flush(&mut self) -> Result<()> {
        self.flush();
        match &self.failed {
            None => Ok(()),
            Some(e) => Err(Error::io(
                &self.path,
                std::io::Error::new(e.kind(), e.to_string()),
            )),
        }
    }

    fn summary(&mut self, tag: &str, value: Value, step: u64) {
        let values = vec![SummaryValue {
            tag: tag.to_string(),
            value,
        }];
        self.event(EventKind::Summary(values), step);
    }

    fn event(&mut self, what: EventKind, step: u64) {
        let wall_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        self.write(Event {
            wall_time,
            step,
            what,
        });
        if self.pending >= MAX_PENDING_EVENTS || self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush();
        }
    }

    fn write(&mut self, event: Event) {
        if self.failed.is_some() {
            return;
        }
        match self.records.write(&event.encode()) {
            Ok(()) => self.pending += 1,
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, error: std::io::Error) {
        tracing::warn!(
            path = %self.path.display(),
            %error,
            "cannot write TensorBoard summaries; no more will be written to this file"
        );
        self.failed = Some(error);
    }
}

impl Drop for SummaryWriter {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::event_file::{event_files, read_event_file};
    use crate::summary::file_name::events_file_name;
    use crate::summary::histogram::Histogram;

    /// The summary values of `events` as `(step, tag, value)`.
    fn values(events: &[Event]) -> Vec<(i64, String, Value)> {
        events
            .iter()
            .flat_map(|e| match &e.what {
                EventKind::Summary(vs) => vs
                    .iter()
                    .map(|v| (e.step, v.tag.clone(), v.value.clone()))
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    fn assert_file_version_first(events: &[Event]) {
        assert_eq!(
            events[0].what,
            EventKind::FileVersion("brain.Event:2".into())
        );
        assert_eq!(events[0].step, 0);
    }

    #[test]
    fn writes_scalars_and_histograms_that_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("nested/run");
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let mut writer = SummaryWriter::create(&run).unwrap();
        writer.scalar("loss", 0.75, 1);
        writer.scalar("global_step/sec", 12.5, 1);
        writer.histogram("dense/weight", &[-1.0, 0.0, 2.0, 2.0], 1);
        writer.scalar("loss", 1e-3, 100);
        writer.session_start(101);
        writer.flush();
        let path = writer.path().to_path_buf();

        assert_eq!(event_files(&run).unwrap(), vec![path.clone()]);
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("events.out.tfevents."), "{name}");
        assert!(
            name.ends_with(&format!(".{}.0000", std::process::id())),
            "{name}"
        );

        // Flushed data is on disk while the writer is still open.
        let events = read_event_file(&path).unwrap();
        assert_eq!(events.len(), 6);
        assert_file_version_first(&events);
        assert!(events
            .iter()
            .all(|e| e.wall_time >= before.floor() && e.wall_time < 1e10));
        let expected_histogram: Histogram = histogram_buckets(&[-1.0, 0.0, 2.0, 2.0]);
        assert_eq!(expected_histogram.num, 4.0);
        assert_eq!(
            values(&events),
            vec![
                (1, "loss".to_string(), Value::Simple(0.75)),
                (1, "global_step/sec".to_string(), Value::Simple(12.5)),
                (
                    1,
                    "dense/weight".to_string(),
                    Value::Histogram(expected_histogram)
                ),
                (100, "loss".to_string(), Value::Simple(1e-3_f32)),
            ]
        );
        assert_eq!(events[5].what, EventKind::SessionLog(SessionStatus::Start));
        assert_eq!(events[5].step, 101);

        // The raw bytes hold the tags as plain strings too (a check independent of the decoder).
        let raw = std::fs::read(&path).unwrap();
        for tag in ["brain.Event:2", "loss", "global_step/sec", "dense/weight"] {
            assert!(
                raw.windows(tag.len()).any(|w| w == tag.as_bytes()),
                "{tag} missing"
            );
        }
    }

    #[test]
    fn two_writers_in_one_second_get_distinct_valid_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = SummaryWriter::create(dir.path()).unwrap();
        let mut second = SummaryWriter::create(dir.path()).unwrap();
        first.scalar("loss", 1.0, 1);
        second.scalar("loss", 2.0, 2);
        let (first_path, second_path) = (first.path().to_path_buf(), second.path().to_path_buf());
        drop(first);
        drop(second);

        assert_ne!(first_path, second_path);
        assert_eq!(event_files(dir.path()).unwrap().len(), 2);
        for (path, step, value) in [(first_path, 1, 1.0), (second_path, 2, 2.0)] {
            let events = read_event_file(&path).unwrap();
            assert_file_version_first(&events);
            assert_eq!(
                values(&events),
                vec![(step, "loss".to_string(), Value::Simple(value))]
            );
        }
    }

    #[test]
    fn never_clobbers_an_existing_file_with_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // Files a previous process with our pid (e.g. PID 1 in a restarted container) left behind
        // for this second and the next.
        let mut planted = Vec::new();
        for s in [secs, secs + 1] {
            let path = dir
                .path()
                .join(events_file_name(s, "host", std::process::id(), 0));
            std::fs::write(&path, b"previous run").unwrap();
            planted.push(path);
        }
        let mut writer = SummaryWriter::create_on_host(dir.path(), "host").unwrap();
        writer.scalar("loss", 3.0, 7);
        let path = writer.path().to_path_buf();
        drop(writer);

        assert!(!planted.contains(&path), "{path:?}");
        assert!(path.to_str().unwrap().ends_with(".0001"), "{path:?}");
        for planted in planted {
            assert_eq!(std::fs::read(planted).unwrap(), b"previous run");
        }
        let events = read_event_file(&path).unwrap();
        assert_eq!(
            values(&events),
            vec![(7, "loss".to_string(), Value::Simple(3.0))]
        );
    }

    #[test]
    fn create_fails_cleanly_when_the_dir_is_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not_a_dir");
        std::fs::write(&file, b"").unwrap();
        let err = SummaryWriter::create(&file).unwrap_err();
        assert!(err.to_string().contains("not_a_dir"), "{err}");
    }

    #[test]
    fn buffered_events_are_flushed_on_drop_and_after_ten_events() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SummaryWriter::create(dir.path()).unwrap();
        for step in 0..MAX_PENDING_EVENTS as u64 {
            writer.scalar("x", step as f64, step);
        }
        let path = writer.path().to_path_buf();
        assert_eq!(
            read_event_file(&path).unwrap().len(),
            1 + MAX_PENDING_EVENTS
        );
        writer.scalar("x", 99.0, 99);
        drop(writer);
        assert_eq!(
            read_event_file(&path).unwrap().len(),
            2 + MAX_PENDING_EVENTS
        );
    }
}
