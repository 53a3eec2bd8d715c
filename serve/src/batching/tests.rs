use std::sync::atomic::{AtomicUsize, Ordering};

use estimator::export::{DType, InputTensors, ServingTensor, TensorElements};
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

    /// Output `y` as a tensor of one value a row; any other as JSON.
    fn predict_outputs(&self, inputs: &Inputs, keys: &[String]) -> OutputsAnswer {
        let predictions = self.predict(&inputs.instances())?;
        if keys.iter().any(|key| key != "y") {
            return Ok(Outputs::Json(predictions));
        }
        let ys = predictions.iter().map(|p| p["y"].as_f64().unwrap() as f32);
        let y = || ServingTensor {
            shape: vec![predictions.len(), 1],
            elements: TensorElements::Float32(ys.clone().collect()),
        };
        Ok(Outputs::Tensors(keys.iter().map(|_| y()).collect()))
    }
}

/// A doubler that makes no tensors of its own.
struct Plain(Doubler);

impl Servable for Plain {
    fn signature(&self) -> &Signature {
        &self.0.signature
    }

    fn predict(&self, instances: &[Instance]) -> Predictions {
        self.0.predict(instances)
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
    let running = batched.predict_later(vec![instance(1.0)]);
    // Once the thread has taken the first, one batch may wait and a second may not.
    let (count, _) = batched.queued.as_ref().unwrap();
    while count.load(Ordering::SeqCst) > 0 {
        std::thread::yield_now();
    }
    let waiting = batched.predict_later(vec![instance(2.0)]);
    let refused = batched.predict_later(vec![instance(3.0)]);
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

fn x_signature() -> Signature {
    Signature::new().with_input("x", DType::Float32)
}

/// `xs` as a call's input tensors.
fn tensors(xs: &[f32]) -> InputTensors {
    let elements = vec![TensorElements::Float32(xs.to_vec())];
    InputTensors::new(&x_signature(), xs.len(), elements).unwrap()
}

/// A doubler of input `x` and its batching, which waits 100 ms for up to 64 instances.
fn waiting_doubler() -> (Arc<Doubler>, Batched) {
    let model = Arc::new(Doubler {
        signature: x_signature(),
        ..Doubler::default()
    });
    let batching = Batching {
        max_batch_size: 64,
        batch_timeout: Duration::from_millis(100),
        ..Batching::default()
    };
    let batched = Batched::new(Arc::clone(&model) as Arc<dyn Servable>, batching);
    (model, batched)
}

/// The rows of output `y` in `answer`, whichever form it came in.
fn ys(answer: Outputs) -> Vec<f32> {
    match answer {
        Outputs::Tensors(tensors) => match &tensors[0].elements {
            TensorElements::Float32(ys) => ys.clone(),
            other => panic!("y as {other:?}"),
        },
        Outputs::Json(predictions) => (predictions.iter())
            .map(|p| p["y"].as_f64().unwrap() as f32)
            .collect(),
    }
}

#[test]
fn tensor_calls_asking_the_same_outputs_share_predictions_and_get_their_rows() {
    let (model, batched) = waiting_doubler();
    let later = |xs: &[f32], key: &str| {
        let (inputs, keys) = (Inputs::Tensors(tensors(xs)), vec![key.to_string()]);
        batched.predict_outputs_later(inputs, keys).ok().unwrap()
    };
    // Queued before the thread has merged them: the first four share a prediction, the
    // instances that follow start a batch of their own (another kind), the next three
    // share one, and the call asking another output runs alone.
    let mut answers: Vec<_> = (0..4)
        .map(|k| later(&[k as f32, 10.0 + k as f32], "y"))
        .collect();
    let instances = batched.predict_later(vec![instance(5.0)]);
    answers.extend((4..7).map(|k| later(&[k as f32, 10.0 + k as f32], "y")));
    answers.push(later(&[7.0, 17.0], "z"));
    for (k, answer) in answers.into_iter().enumerate() {
        let answer = answer.blocking_recv().unwrap().unwrap();
        assert_eq!(matches!(answer, Outputs::Tensors(_)), k < 7);
        let doubled = vec![2.0 * k as f32, 2.0 * (10.0 + k as f32)];
        assert_eq!(ys(answer), doubled);
    }
    let y = instances.blocking_recv().unwrap().unwrap()[0]["y"].as_f64();
    assert_eq!(y, Some(10.0));
    let calls = model.calls.load(Ordering::SeqCst);
    assert!((3..=5).contains(&calls), "9 calls took {calls} predictions");
}

#[test]
fn tensors_a_servable_does_not_lay_out_are_answered_from_its_instances() {
    // The plain doubler makes no tensors: its JSON predictions answer.
    let model = Arc::new(Plain(Doubler::default()));
    let batched = Batched::new(model, Batching::default());
    let (inputs, keys) = (Inputs::Tensors(tensors(&[1.5, -2.0])), vec!["y".into()]);
    let answer = batched.predict_outputs_later(inputs, keys).ok().unwrap();
    let answer = answer.blocking_recv().unwrap().unwrap();
    assert!(matches!(answer, Outputs::Json(_)));
    assert_eq!(ys(answer), [3.0, -4.0]);
}

#[test]
fn rest_calls_asking_the_same_outputs_share_predictions_and_get_their_rows_in_their_form() {
    let (model, batched) = waiting_doubler();
    let later = |k: usize, key: &str| {
        let xs = [k as f64, 10.0 + k as f64];
        // Calls 2 and 3 send tensors (as a REST body read straight into them), the
        // others instances.
        let inputs = match k {
            2 | 3 => Inputs::Tensors(tensors(&xs.map(|x| x as f32))),
            _ => Inputs::Instances(xs.map(instance).to_vec()),
        };
        let keys = vec![key.to_string()];
        batched.predict_outputs_later(inputs, keys).ok().unwrap()
    };
    // Queued before the thread has merged them: the two calls for `y` of instances share
    // a prediction, then the two of tensors, and all four get tensors; the two for `z`
    // share the next and get JSON.
    let answers: Vec<_> = [(0, "y"), (1, "y"), (2, "y"), (3, "y"), (4, "z"), (5, "z")]
        .into_iter()
        .map(|(k, key)| (k, later(k, key)))
        .collect();
    for (k, answer) in answers {
        let doubled = [2.0 * k as f64, 2.0 * (10.0 + k as f64)];
        match answer.blocking_recv().unwrap().unwrap() {
            Outputs::Tensors(tensors) if k < 4 => {
                assert_eq!(tensors[0].shape, [2, 1]);
                let doubled = doubled.map(|y| y as f32).to_vec();
                assert_eq!(tensors[0].elements, TensorElements::Float32(doubled));
            }
            Outputs::Json(predictions) if k >= 4 => {
                let ys: Vec<f64> = predictions
                    .iter()
                    .map(|p| p["y"].as_f64().unwrap())
                    .collect();
                assert_eq!(ys, doubled);
            }
            _ => panic!("call {k} answered in the other form"),
        }
    }
    let calls = model.calls.load(Ordering::SeqCst);
    assert!((3..=4).contains(&calls), "6 calls took {calls} predictions");
}
