//! [`Batched`]: server-side batching (TF Serving's `--enable_batching`): concurrent
//! requests to one model version are merged into one prediction of up to
//! `max_batch_size` instances, waiting at most `batch_timeout` for more to arrive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use estimator::export::Instance;
use estimator::Signature;

use crate::error::ServeError;
use crate::servable::{Predictions, Servable};

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

struct Job {
    instances: Vec<Instance>,
    reply: tokio::sync::oneshot::Sender<Predictions>,
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
        match self.predict_later(instances.to_vec()) {
            Ok(answer) => answer.blocking_recv().unwrap_or_else(|_| Err(stopped())),
            Err(_) => Err(stopped()),
        }
    }

    fn predict_later(
        &self,
        instances: Vec<Instance>,
    ) -> Result<tokio::sync::oneshot::Receiver<Predictions>, Vec<Instance>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let size = instances.len();
        if let Some((count, max)) = &self.queued {
            let before = count.fetch_add(size, Ordering::SeqCst);
            // A request larger than the bound still runs when nothing waits before it.
            if before > 0 && before + size > *max {
                count.fetch_sub(size, Ordering::SeqCst);
                let _ = reply.send(Err(ServeError::Unavailable(
                    "The batch scheduling queue to which this task was submitted is full".into(),
                )));
                return Ok(answer);
            }
        }
        let job = Job { instances, reply };
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(refused) = jobs.send(job) {
            if let Some((count, _)) = &self.queued {
                count.fetch_sub(size, Ordering::SeqCst);
            }
            let _ = refused.0.reply.send(Err(stopped()));
        }
        Ok(answer)
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
            count.fetch_sub(job.instances.len(), Ordering::SeqCst);
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
            let mut size = first.instances.len();
            let mut jobs = vec![first];
            while size < batching.max_batch_size {
                let left = deadline.saturating_duration_since(Instant::now());
                match queue.recv_timeout(left) {
                    Ok(job) if size + job.instances.len() <= batching.max_batch_size => {
                        size += job.instances.len();
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

/// One prediction for every job's instances, split back; when it fails, each job alone, so
/// that a bad request gets its own error and the others their predictions.
fn run(model: &dyn Servable, jobs: Vec<Job>) {
    if jobs.len() > 1 {
        let all: Vec<Instance> = jobs.iter().flat_map(|j| j.instances.clone()).collect();
        // A servable that miscounts is asked job by job: no request gets another's answers.
        match model.predict(&all) {
            Ok(mut predictions) if predictions.len() == all.len() => {
                for job in jobs.into_iter().rev() {
                    let mine = predictions.split_off(predictions.len() - job.instances.len());
                    let _ = job.reply.send(Ok(mine));
                }
                return;
            }
            _ => {}
        }
    }
    for job in jobs {
        let _ = job.reply.send(model.predict(&job.instances));
    }
}

#[cfg(test)]
mod tests;
