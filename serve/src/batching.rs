//! [`Batched`]: server-side batching (TF Serving's `--enable_batching`): concurrent
//! requests to one model version are merged into one prediction of up to
//! `max_batch_size` instances, waiting at most `batch_timeout` for more to arrive.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use estimator::export::Instance;
use estimator::Signature;

use crate::error::ServeError;
use crate::servable::{Predictions, Servable};

/// How requests are merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// Most instances in one merged prediction (a larger request runs alone).
    pub max_batch_size: usize,
    /// Longest a request waits for others to join it.
    pub batch_timeout: Duration,
}

impl Default for Batching {
    /// 32 instances, no wait: a batch is whatever queued while the model was busy with the
    /// last one (TF Serving's advice for CPUs: `batch_timeout_micros` 0, then tune).
    fn default() -> Self {
        Self {
            max_batch_size: 32,
            batch_timeout: Duration::ZERO,
        }
    }
}

struct Job {
    instances: Vec<Instance>,
    reply: tokio::sync::oneshot::Sender<Predictions>,
}

/// A [`Servable`] whose predictions go through one batching thread.
pub struct Batched {
    inner: Arc<dyn Servable>,
    jobs: Mutex<Sender<Job>>,
}

impl Batched {
    /// Batches the predictions of `inner` as `batching` says; the thread ends with the
    /// last handle.
    pub fn new(inner: Arc<dyn Servable>, batching: Batching) -> Self {
        let (jobs, queue) = channel();
        let model = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("batching".into())
            .spawn(move || merge(&*model, &queue, batching))
            .expect("the batching thread starts");
        Self {
            inner,
            jobs: Mutex::new(jobs),
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
        let job = Job { instances, reply };
        let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(refused) = jobs.send(job) {
            let _ = refused.0.reply.send(Err(stopped()));
        }
        Ok(answer)
    }
}

fn stopped() -> ServeError {
    ServeError::Internal("the batching thread has stopped".into())
}

/// Takes jobs as they come, merging those that arrive within the timeout of the first.
fn merge(model: &dyn Servable, queue: &Receiver<Job>, batching: Batching) {
    while let Ok(first) = queue.recv() {
        let deadline = Instant::now() + batching.batch_timeout;
        let mut size = first.instances.len();
        let mut jobs = vec![first];
        while size < batching.max_batch_size {
            let left = deadline.saturating_duration_since(Instant::now());
            match queue.recv_timeout(left) {
                Ok(job) if size + job.instances.len() <= batching.max_batch_size => {
                    size += job.instances.len();
                    jobs.push(job);
                }
                Ok(job) => {
                    run(model, std::mem::take(&mut jobs));
                    size = job.instances.len();
                    jobs.push(job);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        run(model, jobs);
    }
}

/// One prediction for every job's instances, split back; when it fails, each job alone, so
/// that a bad request gets its own error and the others their predictions.
fn run(model: &dyn Servable, jobs: Vec<Job>) {
    if jobs.is_empty() {
        return;
    }
    if jobs.len() > 1 {
        let all: Vec<Instance> = jobs.iter().flat_map(|j| j.instances.clone()).collect();
        if let Ok(mut predictions) = model.predict(&all) {
            for job in jobs.into_iter().rev() {
                let mine = predictions.split_off(predictions.len() - job.instances.len());
                let _ = job.reply.send(Ok(mine));
            }
            return;
        }
    }
    for job in jobs {
        let _ = job.reply.send(model.predict(&job.instances));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Map, Value};

    use super::*;

    /// Answers each instance with its `x` doubled; refuses an instance without `x`; counts
    /// its calls.
    struct Doubler {
        signature: Signature,
        calls: AtomicUsize,
    }

    impl Servable for Doubler {
        fn signature(&self) -> &Signature {
            &self.signature
        }

        fn predict(&self, instances: &[Instance]) -> Predictions {
            self.calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            instances
                .iter()
                .map(|i| match i.get("x").and_then(Value::as_f64) {
                    Some(x) => Ok(Map::from_iter([("y".to_string(), Value::from(2.0 * x))])),
                    None => Err(ServeError::BadRequest("no x".into())),
                })
                .collect()
        }
    }

    fn instance(x: f64) -> Instance {
        Map::from_iter([("x".to_string(), Value::from(x))])
    }

    #[test]
    fn concurrent_requests_share_predictions_and_a_bad_one_fails_alone() {
        let model = Arc::new(Doubler {
            signature: Signature::new(),
            calls: AtomicUsize::new(0),
        });
        let batching = Batching {
            max_batch_size: 64,
            batch_timeout: Duration::from_millis(50),
        };
        let batched = Batched::new(Arc::clone(&model) as Arc<dyn Servable>, batching);
        let answers: Vec<Predictions> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|k| {
                    let batched = &batched;
                    scope.spawn(move || {
                        if k == 5 {
                            batched.predict(&[Map::new()])
                        } else {
                            batched.predict(&[instance(k as f64), instance(10.0 + k as f64)])
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (k, answer) in answers.into_iter().enumerate() {
            if k == 5 {
                assert_eq!(answer.unwrap_err(), ServeError::BadRequest("no x".into()));
                continue;
            }
            let ys: Vec<f64> = answer
                .unwrap()
                .iter()
                .map(|p| p["y"].as_f64().unwrap())
                .collect();
            assert_eq!(ys, [2.0 * k as f64, 2.0 * (10.0 + k as f64)]);
        }
    }

    #[test]
    fn concurrent_requests_are_merged_into_fewer_predictions() {
        let model = Arc::new(Doubler {
            signature: Signature::new(),
            calls: AtomicUsize::new(0),
        });
        let batching = Batching {
            max_batch_size: 64,
            batch_timeout: Duration::from_millis(100),
        };
        let batched = Batched::new(Arc::clone(&model) as Arc<dyn Servable>, batching);
        std::thread::scope(|scope| {
            for k in 0..8 {
                let batched = &batched;
                scope.spawn(move || {
                    let y = batched.predict(&[instance(k as f64)]).unwrap()[0]["y"].clone();
                    assert_eq!(y.as_f64(), Some(2.0 * k as f64));
                });
            }
        });
        let calls = model.calls.load(Ordering::SeqCst);
        assert!(calls < 8, "8 requests took {calls} predictions");
    }

    #[test]
    fn a_request_above_the_batch_size_runs_alone() {
        let model = Arc::new(Doubler {
            signature: Signature::new(),
            calls: AtomicUsize::new(0),
        });
        let batching = Batching {
            max_batch_size: 2,
            batch_timeout: Duration::from_millis(1),
        };
        let batched = Batched::new(model, batching);
        let big: Vec<Instance> = (0..5).map(|k| instance(k as f64)).collect();
        assert_eq!(batched.predict(&big).unwrap().len(), 5);
    }
}
