//! The worker side of the protocol fed replies directly: no client, no clock.

use std::time::Duration;

use super::*;
use crate::distribute::ps::wire::f32_values;

fn pulled(step: u64, generation: u64, variables: &[(&str, &[f32])]) -> PullReply {
    PullReply {
        step,
        generation,
        done: false,
        variables: variables
            .iter()
            .map(|(path, values)| variable(path, &[values.len()], values))
            .collect(),
    }
}

fn pushed(outcome: PushOutcome, step: u64, generation: u64) -> PushReply {
    PushReply {
        outcome: outcome as i32,
        step,
        generation,
        variables: vec![variable("a", &[1], &[step as f32])],
    }
}

/// Worker 3 of two ps tasks that pulled `a` from ps 0 (step 7) and `b` from ps 1 (step 5).
fn after_a_pull() -> PsWorker {
    let mut worker = PsWorker::new(3, 2, Duration::from_secs(5));
    let answer = worker
        .on_pull(Ok(vec![
            pulled(7, 11, &[("a", &[1.0, 2.0])]),
            pulled(5, 11, &[("b", &[3.0])]),
        ]))
        .unwrap();
    assert_eq!(
        answer,
        PullAnswer::Values {
            step: 7,
            values: [("a".into(), vec![1.0, 2.0]), ("b".into(), vec![3.0])].into()
        }
    );
    worker
}

#[test]
fn a_push_sends_each_gradient_to_its_ps_with_the_step_that_ps_was_pulled_at() {
    let worker = after_a_pull();
    let requests = worker
        .push_requests(
            [
                ("b".to_string(), vec![9.0]),
                ("unknown".to_string(), vec![1.0]),
            ],
            [
                ("a".to_string(), vec![0.5, 0.25]),
                ("b".to_string(), vec![-1.0]),
            ],
        )
        .unwrap();
    assert_eq!(requests.len(), 2);
    for (ps, (step, path, grad)) in [(7, "a", vec![0.5, 0.25]), (5, "b", vec![-1.0])]
        .into_iter()
        .enumerate()
    {
        let request = &requests[ps];
        assert_eq!(
            (request.worker, request.step, request.generation),
            (3, step, 11)
        );
        assert_eq!((request.wait_ms, request.pull), (5_000, true));
        assert_eq!(request.gradients.len(), 1);
        assert_eq!(request.gradients[0].path, path);
        assert_eq!(f32_values(&request.gradients[0]).unwrap(), grad);
    }
    // An assigned value goes to its variable's ps; one of no known variable is not sent.
    assert!(requests[0].assign.is_empty());
    assert_eq!(requests[1].assign[0].path, "b");
}

#[test]
fn a_gradient_of_a_variable_no_ps_holds_is_refused() {
    let worker = after_a_pull();
    let error = worker
        .push_requests(std::iter::empty(), [("c".to_string(), vec![1.0])])
        .unwrap_err();
    assert!(
        error.to_string().contains("'c' is on no ps task"),
        "{error}"
    );
}

#[test]
fn pulls_wait_out_a_half_done_initialisation_and_stop_when_any_ps_is_done() {
    let mut worker = PsWorker::new(1, 2, Duration::ZERO);
    let mixed = worker.on_pull(Ok(vec![pulled(0, 1, &[]), pulled(0, 2, &[])]));
    assert_eq!(mixed.unwrap(), PullAnswer::Mixed(vec![1, 2]));
    let done = PullReply {
        done: true,
        ..pulled(9, 3, &[])
    };
    let answer = worker.on_pull(Ok(vec![pulled(9, 2, &[]), done]));
    assert_eq!(answer.unwrap(), PullAnswer::Done);
    let lost = worker.on_pull(Err(PsError::NotInitialised { ps: 1 }));
    assert_eq!(lost.unwrap(), PullAnswer::NotInitialised(1));
    let silent = worker.on_pull(Err(PsError::Unresponsive {
        ps: 0,
        waited: Duration::from_secs(6),
    }));
    assert!(silent.unwrap_err().to_string().starts_with("lost ps:0"));
}

#[test]
fn an_applied_push_brings_the_next_pull_back_once() {
    let mut worker = after_a_pull();
    let answer = worker.on_push(Ok(vec![
        pushed(PushOutcome::Applied, 8, 11),
        pushed(PushOutcome::Applied, 6, 11),
    ]));
    assert_eq!(answer.unwrap(), PushAnswer::Applied(8));
    let prefetched = worker.take_prefetched().expect("the push brought values");
    assert_eq!(
        prefetched.iter().map(|r| r.step).collect::<Vec<_>>(),
        vec![8, 6]
    );
    assert!(worker.take_prefetched().is_none());
    // Taken as a pull, they are what the next push refers to.
    worker.on_pull(Ok(prefetched)).unwrap();
    let requests = worker
        .push_requests(std::iter::empty(), [("a".to_string(), vec![0.0])])
        .unwrap();
    assert_eq!((requests[0].step, requests[1].step), (8, 6));
}

#[test]
fn push_outcomes_other_than_applied_are_dropped_done_or_reported() {
    let mut worker = after_a_pull();
    let stale = worker.on_push(Ok(vec![
        pushed(PushOutcome::Stale, 9, 11),
        pushed(PushOutcome::Applied, 6, 11),
    ]));
    assert_eq!(stale.unwrap(), PushAnswer::Dropped(9));
    // An outcome this build does not know is not counted as applied.
    let unknown = PushReply {
        outcome: 42,
        ..pushed(PushOutcome::Applied, 9, 11)
    };
    let answer = worker.on_push(Ok(vec![unknown, pushed(PushOutcome::Applied, 6, 11)]));
    assert_eq!(answer.unwrap(), PushAnswer::Dropped(9));
    // One ps done ends the job, whatever the other says; nothing is prefetched then.
    worker.forget_prefetched();
    let done = worker.on_push(Ok(vec![
        pushed(PushOutcome::Applied, 10, 11),
        pushed(PushOutcome::Done, 10, 11),
    ]));
    assert_eq!(done.unwrap(), PushAnswer::Done(10));
    assert!(worker.take_prefetched().is_none());
}

#[test]
fn failed_pushes_are_classified_without_sending_them_again() {
    let mut worker = after_a_pull();
    let unreachable = worker.on_push(Err(PsError::Unreachable {
        ps: 1,
        message: "connection refused".into(),
    }));
    // Dropped at the step of the last pull; the next pull goes to the ps tasks.
    assert_eq!(unreachable.unwrap(), PushAnswer::Dropped(7));
    assert!(worker.take_prefetched().is_none());
    let lost = worker.on_push(Err(PsError::NotInitialised { ps: 0 }));
    assert_eq!(lost.unwrap(), PushAnswer::NotInitialised(0));
    let missing = worker.on_push(Err(PsError::TasksMissing {
        ranks: vec![2],
        message: "timed out".into(),
    }));
    assert_eq!(
        missing.unwrap(),
        PushAnswer::TasksMissing {
            ranks: vec![2],
            message: "timed out".into()
        }
    );
    let silent = worker.on_push(Err(PsError::Unresponsive {
        ps: 1,
        waited: Duration::from_secs(6),
    }));
    assert!(matches!(silent, Err(PsError::Unresponsive { ps: 1, .. })));
}
