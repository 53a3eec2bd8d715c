//! Where a step's time goes — input, forward and backward, the exchange with the other
//! replicas bucket by bucket or with the ps tasks, the update, the hooks — as a trace in
//! Chrome's format (Horovod's `HOROVOD_TIMELINE`, TF's `ProfilerHook` for the step's parts):
//! open the file in Perfetto or `chrome://tracing`.
//!
//! The totals per step (`comm/*` summaries, `--json`) say how long copies, the wire and
//! uploads took; only the spans show whether they overlapped: whether bucket k + 1 was read
//! off the device while bucket k was on the wire, and what the training thread waited for.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::io::write_atomic;

/// Which training steps to record, and where the trace goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineSpec {
    /// The trace file, written once the last step recorded is done (or when training ends
    /// before it).
    pub path: PathBuf,
    /// Training steps of the run to pass over first: start-up (default 10).
    #[serde(default = "default_skip_steps")]
    pub skip_steps: u64,
    /// Training steps to record (default 10).
    #[serde(default = "default_steps")]
    pub steps: u64,
}

fn default_skip_steps() -> u64 {
    10
}

fn default_steps() -> u64 {
    10
}

impl TimelineSpec {
    /// Records steps 11 to 20 of the run into `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            skip_steps: default_skip_steps(),
            steps: default_steps(),
        }
    }

    /// Passes over the first `skip` training steps, then records `steps`.
    pub fn with_steps(self, skip: u64, steps: u64) -> Self {
        Self {
            skip_steps: skip,
            steps,
            ..self
        }
    }
}

/// The thread a span ran on: a row of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The training thread: the step's input, forward and backward passes, update and
    /// hooks, and in the sync, reads off the device and uploads.
    Training = 0,
    /// The thread that all-reduces the buckets, while the training thread copies.
    AllReduce = 1,
}

/// One span of the trace.
#[derive(Debug, Clone)]
struct Span {
    name: &'static str,
    lane: Lane,
    bucket: Option<usize>,
    step: u64,
    start: Duration,
    duration: Duration,
    /// Of an all-reduce, the time spent encoding and summing rather than waiting.
    compute: Option<Duration>,
}

/// A timeline being recorded, shared by the threads of a step.
#[derive(Debug, Clone)]
pub struct Timeline(Arc<Mutex<Recording>>);

#[derive(Debug)]
struct Recording {
    spec: TimelineSpec,
    rank: usize,
    origin: Instant,
    /// Training steps done so far.
    step: u64,
    spans: Vec<Span>,
    written: bool,
}

impl Timeline {
    /// A timeline recording `spec`'s steps of rank `rank`.
    pub fn new(spec: TimelineSpec, rank: usize) -> Self {
        Self(Arc::new(Mutex::new(Recording {
            spec,
            rank,
            origin: Instant::now(),
            step: 0,
            spans: Vec::new(),
            written: false,
        })))
    }

    fn recording(&self) -> MutexGuard<'_, Recording> {
        // A panicking thread leaves plain spans behind, still worth writing.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the step now under way is one to record.
    pub(crate) fn records(&self) -> bool {
        self.recording().records()
    }

    /// Records span `name` of `bucket` (none: the whole step's) on `lane`, from `started`
    /// to now, when the step under way is one to record.
    pub(crate) fn span(
        &self,
        name: &'static str,
        lane: Lane,
        bucket: Option<usize>,
        started: Instant,
    ) {
        self.span_computing(name, lane, bucket, started, None);
    }

    /// [`span`](Self::span) of an all-reduce that spent `compute` of it encoding and summing.
    pub(crate) fn span_computing(
        &self,
        name: &'static str,
        lane: Lane,
        bucket: Option<usize>,
        started: Instant,
        compute: Option<Duration>,
    ) {
        let ended = Instant::now();
        let mut recording = self.recording();
        if !recording.records() {
            return;
        }
        let span = Span {
            name,
            lane,
            bucket,
            step: recording.step,
            start: started.saturating_duration_since(recording.origin),
            duration: ended.saturating_duration_since(started),
            compute,
        };
        recording.spans.push(span);
    }

    /// Ends the step under way; after the last step to record, writes the trace.
    pub(crate) fn end_step(&self) {
        let mut recording = self.recording();
        recording.step += 1;
        if recording.step == recording.spec.skip_steps + recording.spec.steps {
            recording.write();
        }
    }
}

impl Recording {
    fn records(&self) -> bool {
        let first = self.spec.skip_steps;
        !self.written && self.step >= first && self.step < first + self.spec.steps
    }

    /// Writes the spans recorded as a Chrome trace; a failure is logged, not raised: the
    /// trace is a diagnosis, not worth a training run.
    fn write(&mut self) {
        self.written = true;
        let path = &self.spec.path;
        let bytes = serde_json::to_vec(&chrome_trace(&self.spans, self.rank))
            .expect("a trace of numbers and names serialises");
        match write_atomic(path, &bytes) {
            Ok(()) => tracing::info!(
                "timeline of {} training step(s) written to {}",
                self.spans
                    .iter()
                    .map(|s| s.step)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                path.display()
            ),
            Err(e) => tracing::warn!("timeline not written: {e}"),
        }
    }
}

impl Drop for Recording {
    /// Training ended before the last step to record: what there is, is written.
    fn drop(&mut self) {
        if self.written {
            return;
        }
        if self.spans.is_empty() {
            tracing::warn!(
                "no timeline written to {}: training took {} step(s), and the timeline \
                 passes over the first {}",
                self.spec.path.display(),
                self.step,
                self.spec.skip_steps
            );
            return;
        }
        self.write();
    }
}

/// `spans` as Chrome's trace event format: complete events ("X") in microseconds, one
/// process for the rank, one thread per lane, named.
fn chrome_trace(spans: &[Span], rank: usize) -> Value {
    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "pid": rank,
               "args": {"name": format!("rank {rank}")}}),
        json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": Lane::Training as u8,
               "args": {"name": "training"}}),
        json!({"name": "thread_name", "ph": "M", "pid": rank, "tid": Lane::AllReduce as u8,
               "args": {"name": "all-reduce"}}),
    ];
    events.extend(spans.iter().map(|span| {
        let mut args = json!({"step": span.step});
        if let Some(bucket) = span.bucket {
            args["bucket"] = json!(bucket);
        }
        if let Some(compute) = span.compute {
            args["compute_us"] = json!(compute.as_secs_f64() * 1e6);
        }
        json!({
            "name": span.name,
            "ph": "X",
            "pid": rank,
            "tid": span.lane as u8,
            "ts": span.start.as_secs_f64() * 1e6,
            "dur": span.duration.as_secs_f64() * 1e6,
            "args": args,
        })
    }));
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &std::path::Path) -> Vec<Value> {
        let text = std::fs::read_to_string(path).unwrap();
        let trace: Value = serde_json::from_str(&text).unwrap();
        trace["traceEvents"].as_array().unwrap().clone()
    }

    #[test]
    fn only_the_steps_asked_for_are_recorded_and_written_after_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeline.json");
        let timeline = Timeline::new(TimelineSpec::new(&path).with_steps(2, 2), 1);
        for step in 0..5 {
            assert_eq!(timeline.records(), (2..4).contains(&step), "step {step}");
            let started = Instant::now();
            timeline.span("copy", Lane::Training, Some(0), started);
            timeline.span_computing(
                "all-reduce",
                Lane::AllReduce,
                Some(0),
                started,
                Some(Duration::from_micros(250)),
            );
            timeline.span("sync", Lane::Training, None, started);
            timeline.end_step();
            assert_eq!(path.exists(), step >= 3, "step {step}");
        }
        let events = read(&path);
        let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(spans.len(), 6);
        assert!(spans.iter().all(|e| e["pid"] == 1));
        let steps: Vec<u64> = spans
            .iter()
            .map(|e| e["args"]["step"].as_u64().unwrap())
            .collect();
        assert_eq!(steps, [2, 2, 2, 3, 3, 3]);
        assert_eq!(spans[1]["name"], "all-reduce");
        assert_eq!(spans[1]["tid"], Lane::AllReduce as u8);
        assert_eq!(spans[1]["args"]["bucket"], 0);
        assert_eq!(spans[1]["args"]["compute_us"], 250.0);
        assert!(spans[0]["args"].get("compute_us").is_none());
        assert!(spans[2]["args"].get("bucket").is_none());
        assert!(spans.iter().all(|e| e["dur"].as_f64().unwrap() >= 0.0));
        let names: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(names[0]["args"]["name"], "rank 1");
    }

    #[test]
    fn a_run_ending_inside_the_window_writes_what_it_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.json");
        let timeline = Timeline::new(TimelineSpec::new(&path).with_steps(0, 10), 0);
        timeline.span("sync", Lane::Training, None, Instant::now());
        timeline.end_step();
        assert!(!path.exists());
        drop(timeline);
        assert_eq!(read(&path).iter().filter(|e| e["ph"] == "X").count(), 1);
    }
}
