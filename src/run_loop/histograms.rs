//! The chief's weight histograms, bucketed on a thread of their own: bucketing every weight
//! of a wide model (millions of values, tens of milliseconds) would otherwise stall the
//! training step on every summary step. The training thread only copies the values out.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::summary::{histogram_buckets, Histogram, SummaryWriter};

/// One summary step's variables: (name, values).
struct Job {
    step: u64,
    variables: Vec<(String, Vec<f32>)>,
}

/// One summary step's histograms.
struct Bucketed {
    step: u64,
    histograms: Vec<(String, Histogram)>,
}

/// Hands variables to the bucketing thread and writes what it has finished.
pub(super) struct Histograms {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Bucketed>,
    worker: Option<JoinHandle<()>>,
    /// Jobs sent whose histograms are not written yet.
    pending: usize,
}

impl Histograms {
    pub fn new() -> Self {
        // One job queued behind the one being bucketed: a chief summarising faster than
        // the thread keeps up waits here rather than holding every step's weights.
        let (jobs, queued) = sync_channel::<Job>(1);
        let (finished, done) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("summary-histograms".into())
            .spawn(move || {
                for Job { step, variables } in queued {
                    let histograms = variables
                        .into_iter()
                        .map(|(name, values)| (name, histogram_buckets(&values)))
                        .collect();
                    if finished.send(Bucketed { step, histograms }).is_err() {
                        return;
                    }
                }
            });
        let (jobs, worker) = match worker {
            Ok(worker) => (Some(jobs), Some(worker)),
            Err(e) => {
                tracing::warn!("cannot start a thread for weight histograms ({e}); none written");
                (None, None)
            }
        };
        Self {
            jobs,
            done,
            worker,
            pending: 0,
        }
    }

    /// Queues `variables` for their histograms at `step`.
    pub fn send(&mut self, step: u64, variables: Vec<(String, Vec<f32>)>) {
        if let Some(jobs) = &self.jobs {
            if jobs.send(Job { step, variables }).is_ok() {
                self.pending += 1;
            }
        }
    }

    /// Writes the histograms finished so far, without waiting.
    pub fn write_finished(&mut self, writer: &mut SummaryWriter) {
        while let Ok(bucketed) = self.done.try_recv() {
            self.write(writer, bucketed);
        }
    }

    /// Writes every histogram queued so far, waiting for the thread to finish them.
    pub fn write_all(&mut self, writer: &mut SummaryWriter) {
        while self.pending > 0 {
            match self.done.recv() {
                Ok(bucketed) => self.write(writer, bucketed),
                Err(_) => break,
            }
        }
    }

    fn write(&mut self, writer: &mut SummaryWriter, Bucketed { step, histograms }: Bucketed) {
        self.pending -= 1;
        for (name, histogram) in histograms {
            writer.bucketed_histogram(&name, histogram, step);
        }
    }
}

impl Drop for Histograms {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{event_files, read_event_file, EventKind, Value};

    #[test]
    fn histograms_are_written_with_their_step_once_finished() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = SummaryWriter::create(dir.path()).unwrap();
        let mut histograms = Histograms::new();
        for step in [10, 20, 30] {
            let values = vec![step as f32; 4];
            histograms.send(step, vec![("dense/weight".into(), values)]);
            histograms.write_finished(&mut writer);
        }
        histograms.write_all(&mut writer);
        assert_eq!(histograms.pending, 0);
        writer.flush();
        let file = &event_files(dir.path()).unwrap()[0];
        let mut seen = Vec::new();
        for event in read_event_file(file).unwrap() {
            if let EventKind::Summary(values) = event.what {
                for value in values {
                    if let Value::Histogram(h) = value.value {
                        assert_eq!(value.tag, "dense/weight");
                        assert_eq!(h.num, 4.0);
                        assert_eq!(h.max, event.step as f64);
                        seen.push(event.step);
                    }
                }
            }
        }
        assert_eq!(seen, [10, 20, 30]);
    }
}
