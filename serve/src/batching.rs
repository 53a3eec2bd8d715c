//! [`Batched`]: server-side batching (TF Serving's `--enable_batching`): concurrent
//! requests to one model version are merged into one prediction of up to
//! `max_batch_size` instances, waiting at most `batch_timeout` for more to arrive. Requests
//! merge with others of their kind: calls asking the same outputs of inputs of one form
//! (instances, or tensors of the same inputs), REST and gRPC alike, their inputs joined.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use estimator::export::Instance;
use estimator::Signature;

use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::servable::{Outputs, OutputsAnswer, Predictions, Servable};
use job::Job;

/// How requests are merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batching {
    /// Most instances in one merged prediction (a larger request runs alone).
    pub max_batch_size: usize,
    /// Longest a request waits for others to join it.
    pub batch_timeout: Duration,
    /// Threads forming and running merged predictions, per version: several run at once
    /// on the version's copies (TF Serving's `num_batch_threads`).
    pub num_batch_threads: usize,
    /// Most batches waiting to be formed, counted as `max_batch_size` instances each; a
    /// request that would queue beyond is answered 503 (TF Serving's
    /// `max_enqueued_batches`). `None`: no bound but `--max-instances-in-flight`.
    pub max_enqueued_batches: Option<usize>,
    /// The batching threads' name (TF Serving's `thread_pool_name`).
    pub thread_pool_name: Option<String>,
}

impl Default for Batching {
    /// 32 instances, no wait: a batch is whatever queued while the model was busy with the
    /// last one (TF Serving's advice for CPUs: `batch_timeout_micros` 0, then tune); one
    /// thread, no bound on the queue.
    fn default() -> Self {
        Self {
            max_batch_size: 32,
            batch_timeout: Duration::ZERO,
            num_batch_threads: 1,
            max_enqueued_batches: None,
            thread_pool_name: None,
        }
    }
}

/// A [`Servable`] whose predictions go through batching threads.
pub struct Batched {
    inner: Arc<dyn Servable>,
    jobs: Mutex<Sender<Job>>,
    /// Instances sent and not yet taken by a batching thread, and their bound (from
    /// `max_enqueued_batches`); counted only when bounded.
    queued: Option<(Arc<AtomicUsize>, usize)>,
}

impl Batched {
    /// Batches the predictions of `inner` as `batching` says; the threads end with the
    /// last handle.
    pub fn new(inner: Arc<dyn Servable>, batching: Batching) -> Self {
        let (jobs, queue) = channel();
        let queue = Arc::new(Mutex::new(queue));
        let queued = batching.max_enqueued_batches.map(|batches| {
            let max = batches.saturating_mul(batching.max_batch_size);
            (Arc::new(AtomicUsize::new(0)), max)
        });
        let name = batching.thread_pool_name.as_deref().unwrap_or("batching");
        for thread in 0..batching.num_batch_threads.max(1) {
            let (model, queue) = (Arc::clone(&inner), Arc::clone(&queue));
            let queued = queued.as_ref().map(|(count, _)| Arc::clone(count));
            let batching = batching.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{thread}"))
                .spawn(move || merge(&*model, &queue, queued.as_deref(), &batching));
            // Those that started serve; with none, requests are answered that the batching
            // thread has stopped.
            if let Err(e) = spawned {
                tracing::error!("batching thread {name}-{thread} did not start: {e}");
                break;
            }
        }
        Self {
            inner,
            jobs: Mutex::new(jobs),
            queued,
        }
    }
}

impl Servable for Batched {
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn predict(&self, instances: &[Instance]) -> Predictions {
        let answer = self.predict_later(instances.to_vec());
        answer.blocking_recv().unwrap_or_else(|_| Err(stopped()))
    }

    fn predict_outputs_later(
        &self,
        inputs: Inputs,
        keys: Vec<String>,
    ) -> Result<tokio::sync::oneshot::Receiver<OutputsAnswer>, (Inputs, Vec<String>)> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.enqueue(Job::Outputs {
            inputs,
            keys,
            reply,
        });
        Ok(answer)
    }
}

impl Batched {
    /// The predictions for `instances`, to await: made with those of other calls for
    /// instances.
    fn predict_later(
        &self,
        instances: Vec<Instance>,
    ) -> tokio::sync::oneshot::Receiver<Predictions> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.enqueue(Job::Instances(instances, reply));
        answer
    }

    /// Queues `job` for the batching threads, or answers it that the queue is full or that
    /// they have stopped.
    fn enqueue(&self, job: Job) {
        let size = job.size();
        if let Some((count, max)) = &self.queued {
            let before = count.fetch_add(size, Ordering::SeqCst);
            // A request larger than the bound still runs when nothing waits before it.
            if before > 0 && before + size > *max {
                count.fetch_sub(size, Ordering::SeqCst);
                job.refuse(ServeError::Unavailable(
                    "The batch scheduling queue to which this task was submitted is full".into(),
                ));
                return;
            }
        }
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(refused) = jobs.send(job) {
            if let Some((count, _)) = &self.queued {
                count.fetch_sub(size, Ordering::SeqCst);
            }
            refused.0.refuse(stopped());
        }
    }
}

fn stopped() -> ServeError {
    ServeError::Internal("the batching thread has stopped".into())
}

/// One batching thread: takes jobs as they come, merging those that arrive within the
/// timeout of the first, and runs the merged prediction once it has let the queue go, so
/// that another thread forms the next batch meanwhile. A job that does not fit starts the
/// thread's next batch.
fn merge(
    model: &dyn Servable,
    queue: &Mutex<Receiver<Job>>,
    queued: Option<&AtomicUsize>,
    batching: &Batching,
) {
    let take = |job: Job| {
        if let Some(count) = queued {
            count.fetch_sub(job.size(), Ordering::SeqCst);
        }
        job
    };
    let mut leftover: Option<Job> = None;
    loop {
        let jobs = {
            let queue = queue.lock().unwrap_or_else(|e| e.into_inner());
            let first = match leftover.take() {
                Some(job) => job,
                None => match queue.recv() {
                    Ok(job) => take(job),
                    Err(_) => return,
                },
            };
            let deadline = Instant::now() + batching.batch_timeout;
            let mut size = first.size();
            let mut jobs = vec![first];
            while size < batching.max_batch_size {
                let left = deadline.saturating_duration_since(Instant::now());
                match queue.recv_timeout(left) {
                    Ok(job)
                        if size + job.size() <= batching.max_batch_size && jobs[0].joins(&job) =>
                    {
                        size += job.size();
                        jobs.push(take(job));
                    }
                    Ok(job) => {
                        leftover = Some(take(job));
                        break;
                    }
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
            jobs
        };
        run(model, jobs);
    }
}

/// One prediction for every job's rows, split back; when it fails, each job alone, so that
/// a bad request gets its own error and the others their predictions.
fn run(model: &dyn Servable, jobs: Vec<Job>) {
    let alone = match jobs.len() {
        1 => jobs,
        _ => run_merged(model, jobs),
    };
    for job in alone {
        job.run_alone(model);
    }
}

/// Answers `jobs` (all of one kind, as [`Job::joins`] makes a batch) from one prediction;
/// gives them back unanswered when it fails, or when a servable miscounts (no request gets
/// another's answers).
fn run_merged(model: &dyn Servable, jobs: Vec<Job>) -> Vec<Job> {
    let rows: usize = jobs.iter().map(Job::size).sum();
    let answer = match &jobs[0] {
        Job::Instances(..) => {
            let instances = (jobs.iter()).flat_map(|job| match job {
                Job::Instances(mine, _) => mine.as_slice(),
                _ => &[],
            });
            model
                .predict(&instances.cloned().collect::<Vec<_>>())
                .map(Outputs::Json)
        }
        Job::Outputs { keys, .. } => {
            let inputs = (jobs.iter()).filter_map(|job| match job {
                Job::Outputs { inputs, .. } => Some(inputs),
                _ => None,
            });
            let Some(all) = Inputs::concat(&inputs.collect::<Vec<_>>()) else {
                return jobs;
            };
            model.predict_outputs(&all, keys)
        }
    };
    let counted = match &answer {
        Ok(Outputs::Json(predictions)) => predictions.len() == rows,
        Ok(Outputs::Tensors(tensors)) => tensors.iter().all(|t| t.is_batch_of(rows)),
        Err(_) => false,
    };
    let Some(answer) = answer.ok().filter(|_| counted) else {
        return jobs;
    };
    match answer {
        Outputs::Json(mut predictions) => {
            for job in jobs.into_iter().rev() {
                let mine = predictions.split_off(predictions.len() - job.size());
                job.answer(Outputs::Json(mine));
            }
        }
        Outputs::Tensors(tensors) => {
            let mut start = 0;
            for job in jobs {
                let rows = start..start + job.size();
                start = rows.end;
                let mine = tensors.iter().flat_map(|t| t.rows(rows.clone())).collect();
                job.answer(Outputs::Tensors(mine));
            }
        }
    }
    Vec::new()
}

mod job;
#[cfg(test)]
mod tests;
