//! The chief's weight histograms, read and bucketed on a thread of their own: bucketing
//! every weight of a wide model (millions of values, tens of milliseconds) would otherwise
//! stall the training step on every summary step, and reading them on a GPU waits for the
//! device. The training thread only hands over the tensors (reference-counted handles).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use crate::summary::{histogram_buckets, Histogram, SummaryWriter};

/// Reads one variable's values; `None` when the device cannot give them.
pub(super) type ReadValues = Box<dyn FnOnce() -> Option<Vec<f32>> + Send>;

/// One summary step's variables: (name, how to read its values).
struct Job {
    step: u64,
    variables: Vec<(String, ReadValues)>,
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
                    // Every read before any bucketing, so the tensors are let go of soon:
                    // a CPU optimizer updates a weight in place only while no one else
                    // holds it.
                    let read: Vec<(String, Vec<f32>)> = variables
                        .into_iter()
                        .filter_map(|(name, read)| Some((name, read()?)))
                        .collect();
                    let histograms = read
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
    pub fn send(&mut self, step: u64, variables: Vec<(String, ReadValues)>) {
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

/// The float parameters of `model` by their paths ("dense.weight"), each to be read
/// wherever the returned closure runs.
pub(super) fn weight_readers<B: AutodiffBackend, M: Module<B>>(
    model: &M,
) -> Vec<(String, ReadValues)> {
    let mut collector = Readers {
        path: Vec::new(),
        readers: Vec::new(),
    };
    model.visit(&mut collector);
    collector.readers
}

struct Readers {
    path: Vec<String>,
    readers: Vec<(String, ReadValues)>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Readers {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let tensor = param.val().inner();
        let read: ReadValues = Box::new(move || {
            tensor
                .try_into_data()
                .ok()?
                .convert::<f32>()
                .to_vec::<f32>()
                .ok()
        });
        self.readers.push((self.path.join("."), read));
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
            let read: ReadValues = Box::new(move || Some(values));
            histograms.send(step, vec![("dense/weight".into(), read)]);
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
