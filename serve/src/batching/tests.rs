use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};

use super::*;

/// Answers each instance with its `x` doubled; refuses an instance without `x`; counts
/// its calls.
#[derive(Default)]
struct Doubler {
    signature: Signature,
    calls: AtomicUsize,
    /// How long a prediction takes (5 ms when zero).
    pause: Duration,
    running: AtomicUsize,
    /// Most predictions running at once.
    peak: AtomicUsize,
    /// Answers a batch of several instances with one prediction too few.
    miscounts: bool,
}

impl Servable for Doubler {
    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn predict(&self, instances: &[Instance]) -> Predictions {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(running, Ordering::SeqCst);
        std::thread::sleep(self.pause.max(Duration::from_millis(5)));
        self.running.fetch_sub(1, Ordering::SeqCst);
        let answered = match self.miscounts && instances.len() > 1 {
            true => &instances[1..],
            false => instances,
        };
        answered
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
    let model = Arc::new(Doubler::default());
    let batching = Batching {
        max_batch_size: 64,
        batch_timeout: Duration::from_millis(50),
        ..Batching::default()
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

/// Eight single-instance requests at once, each checked to get its own answer; the
/// predictions the model made for them.
fn eight_requests_at_once(model: Doubler) -> usize {
    let model = Arc::new(model);
    let batching = Batching {
        max_batch_size: 64,
        batch_timeout: Duration::from_millis(100),
        ..Batching::default()
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
    model.calls.load(Ordering::SeqCst)
}

#[test]
fn concurrent_requests_are_merged_into_fewer_predictions() {
    let calls = eight_requests_at_once(Doubler::default());
    assert!(calls < 8, "8 requests took {calls} predictions");
}

#[test]
fn a_model_that_miscounts_a_batch_is_asked_request_by_request() {
    let calls = eight_requests_at_once(Doubler {
        miscounts: true,
        ..Doubler::default()
    });
    // Merged at least once (then asked again one by one), or the test proves nothing.
    assert!(calls > 8, "8 requests took {calls} predictions");
}

#[test]
fn a_request_above_the_batch_size_runs_alone() {
    let model = Arc::new(Doubler::default());
    let batching = Batching {
        max_batch_size: 2,
        batch_timeout: Duration::from_millis(1),
        ..Batching::default()
    };
    let batched = Batched::new(model, batching);
    let big: Vec<Instance> = (0..5).map(|k| instance(k as f64)).collect();
    assert_eq!(batched.predict(&big).unwrap().len(), 5);
}

/// `requests` single-instance requests at once, each its own batch; the most
/// predictions that ran at the same time.
fn peak_with_threads(threads: usize, requests: usize) -> usize {
    let model = Arc::new(Doubler {
        pause: Duration::from_millis(30),
        ..Doubler::default()
    });
    let batching = Batching {
        max_batch_size: 1,
        num_batch_threads: threads,
        ..Batching::default()
    };
    let batched = Batched::new(Arc::clone(&model) as Arc<dyn Servable>, batching);
    std::thread::scope(|scope| {
        for k in 0..requests {
            let batched = &batched;
            scope.spawn(move || assert!(batched.predict(&[instance(k as f64)]).is_ok()));
        }
    });
    assert_eq!(model.calls.load(Ordering::SeqCst), requests);
    model.peak.load(Ordering::SeqCst)
}

#[test]
fn several_batching_threads_run_predictions_at_once_and_one_runs_them_in_turn() {
    assert_eq!(peak_with_threads(1, 6), 1);
    assert!(peak_with_threads(3, 6) >= 2);
}

#[test]
fn a_request_beyond_the_enqueued_batches_is_answered_unavailable() {
    let model = Arc::new(Doubler {
        pause: Duration::from_millis(300),
        ..Doubler::default()
    });
    let batching = Batching {
        max_batch_size: 1,
        max_enqueued_batches: Some(1),
        ..Batching::default()
    };
    let batched = Batched::new(model, batching);
    let running = batched.predict_later(vec![instance(1.0)]).ok().unwrap();
    // Once the thread has taken the first, one batch may wait and a second may not.
    let (count, _) = batched.queued.as_ref().unwrap();
    while count.load(Ordering::SeqCst) > 0 {
        std::thread::yield_now();
    }
    let waiting = batched.predict_later(vec![instance(2.0)]).ok().unwrap();
    let refused = batched.predict_later(vec![instance(3.0)]).ok().unwrap();
    let refused = refused.blocking_recv().unwrap().unwrap_err();
    assert_eq!(
        refused.status(),
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(refused.to_string().contains("queue"), "{refused}");
    for (answer, x) in [(running, 1.0), (waiting, 2.0)] {
        let y = answer.blocking_recv().unwrap().unwrap()[0]["y"].as_f64();
        assert_eq!(y, Some(2.0 * x));
    }
    // Drained, the queue takes requests again.
    assert!(batched.predict(&[instance(4.0)]).is_ok());
}
