//! The worker side of the protocol fed replies directly: no client, and a clock the tests
//! advance.

use std::time::{Duration, Instant};

use super::*;

const PEER_TIMEOUT: Duration = Duration::from_secs(5);

fn names() -> Vec<String> {
    ["chief:0", "worker:0", "worker:1", "worker:2"]
        .map(String::from)
        .to_vec()
}

fn pulled(step: u64, generation: u64, variables: &[(&str, &[f32])]) -> Pulled {
    Pulled::Values {
        step,
        generation,
        version: step,
        variables: variables
            .iter()
            .map(|(path, values)| (path.to_string(), values.to_vec()))
            .collect(),
    }
}

fn pushed(outcome: PushOutcome, step: u64, generation: u64) -> Pushed {
    Pushed {
        outcome,
        step,
        generation,
        version: step,
        variables: vec![("a".into(), vec![step as f32])],
    }
}

/// Training task `rank` of two ps tasks, not yet pulled.
fn task(rank: u32) -> PsWorker {
    PsWorker::new(rank, names(), 2, PEER_TIMEOUT, Duration::from_secs(20))
}

/// Worker 3 of two ps tasks that pulled `a` from ps 0 (step 7) and `b` from ps 1 (step 5).
fn after_a_pull() -> PsWorker {
    let mut worker = task(3);
    let answer = worker
        .on_pull(
            Ok(vec![
                pulled(7, 11, &[("a", &[1.0, 2.0])]),
                pulled(5, 11, &[("b", &[3.0])]),
            ]),
            Instant::now(),
        )
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
    let pushes = worker
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
    assert_eq!(pushes.len(), 2);
    for (ps, (step, path, grad)) in [(7, "a", vec![0.5, 0.25]), (5, "b", vec![-1.0])]
        .into_iter()
        .enumerate()
    {
        let push = &pushes[ps];
        assert_eq!((push.worker, push.step, push.generation), (3, step, 11));
        assert_eq!((push.wait, push.pull), (PEER_TIMEOUT, true));
        assert_eq!(push.gradients, vec![(path.to_string(), grad)]);
        // Its answer brings back what changed since the values pulled.
        let held = Held {
            generation: 11,
            version: step,
        };
        assert_eq!(push.since, Some(held));
    }
    // An assigned value goes to its variable's ps; one of no known variable is not sent.
    assert!(pushes[0].assign.is_empty());
    assert_eq!(pushes[1].assign, vec![("b".to_string(), vec![9.0])]);
}

#[test]
fn each_ps_is_asked_for_what_changed_since_the_values_taken_from_it() {
    let t0 = Instant::now();
    let mut worker = task(1);
    let first = worker.pull_request(t0);
    assert!(
        first.iter().all(|pull| pull.since.is_none()),
        "all at first"
    );
    worker
        .on_pull(Ok(vec![pulled(4, 1, &[]), pulled(6, 1, &[])]), t0)
        .unwrap();
    let since = |pulls: Vec<Pull>| pulls.iter().map(|p| p.since).collect::<Vec<_>>();
    let held = |version| {
        Some(Held {
            generation: 1,
            version,
        })
    };
    assert_eq!(since(worker.pull_request(t0)), [held(4), held(6)]);
    // Values not taken (the ps tasks on two initialisations) leave what is held as it was.
    let mixed = worker.on_pull(Ok(vec![pulled(9, 1, &[]), pulled(0, 2, &[])]), t0);
    assert_eq!(mixed.unwrap(), PullAnswer::Again);
    assert_eq!(since(worker.pull_request(t0)), [held(4), held(6)]);
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
fn a_first_pull_waits_for_the_chief_then_as_long_as_a_silent_peer() {
    let t0 = Instant::now();
    let chief = task(0);
    assert_eq!(
        chief.pull_request(t0),
        vec![Pull::default(); 2],
        "the chief waits for nobody"
    );
    let mut worker = task(1);
    assert_eq!(worker.pull_request(t0)[1].wait, Duration::from_secs(20));
    worker
        .on_pull(Ok(vec![pulled(0, 1, &[]), pulled(0, 1, &[])]), t0)
        .unwrap();
    assert_eq!(worker.pull_request(t0)[1].wait, PEER_TIMEOUT);
}

#[test]
fn mixed_initialisations_are_waited_out_on_the_ps_for_the_newest_within_the_peer_timeout() {
    let t0 = Instant::now();
    let mut worker = task(1);
    let mixed = worker.on_pull(Ok(vec![pulled(0, 1, &[]), pulled(5, 2, &[])]), t0);
    assert_eq!(mixed.unwrap(), PullAnswer::Again);
    // The next pull asks every ps for the newest initialisation, for what is left of the
    // peer timeout since the ps tasks were first seen to disagree.
    let t1 = t0 + Duration::from_secs(2);
    let next = worker.pull_request(t1)[0];
    assert_eq!(next.min_generation, Some(2));
    assert_eq!(next.wait, Duration::from_secs(3));
    let again = worker.on_pull(Ok(vec![pulled(0, 1, &[]), pulled(5, 2, &[])]), t1);
    assert_eq!(again.unwrap(), PullAnswer::Again);
    let resolved = worker.on_pull(Ok(vec![pulled(5, 2, &[]), pulled(5, 2, &[])]), t1);
    assert!(matches!(
        resolved.unwrap(),
        PullAnswer::Values { step: 5, .. }
    ));
    assert_eq!(worker.pull_request(t1)[0].min_generation, None);
    // Disagreeing past the peer timeout: the chief stopped half-way.
    worker
        .on_pull(Ok(vec![pulled(5, 2, &[]), pulled(0, 3, &[])]), t1)
        .unwrap();
    let late = t1 + PEER_TIMEOUT;
    let error = worker
        .on_pull(Ok(vec![pulled(5, 2, &[]), pulled(0, 3, &[])]), late)
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("lost chief:0: the ps tasks still hold different"),
        "{error}"
    );
}

#[test]
fn a_lost_ps_is_the_chiefs_to_reinitialise_and_the_others_wait_for_it() {
    let t0 = Instant::now();
    let lost = || Err(Error::Ps(PsFault::NotInitialised { ps: 1 }));
    assert_eq!(
        task(0).on_pull(lost(), t0).unwrap(),
        PullAnswer::Reinitialise(1)
    );
    let mut worker = task(1);
    assert_eq!(worker.on_pull(lost(), t0).unwrap(), PullAnswer::Again);
    let done = worker.on_pull(Ok(vec![pulled(9, 2, &[]), Pulled::Done]), t0);
    assert_eq!(done.unwrap(), PullAnswer::Done);
    let silent = worker.on_pull(
        Err(Error::Ps(PsFault::Unresponsive {
            ps: 0,
            waited: Duration::from_secs(6),
        })),
        t0,
    );
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
    assert_eq!(prefetched[1], pulled(6, 11, &[("a", &[6.0])]));
    assert!(worker.take_prefetched().is_none());
    // Taken as a pull, they are what the next push refers to.
    worker.on_pull(Ok(prefetched), Instant::now()).unwrap();
    let pushes = worker
        .push_requests(std::iter::empty(), [("a".to_string(), vec![0.0])])
        .unwrap();
    assert_eq!((pushes[0].step, pushes[1].step), (8, 6));
}

#[test]
fn push_outcomes_other_than_applied_are_dropped_or_done() {
    let mut worker = after_a_pull();
    let stale = worker.on_push(Ok(vec![
        pushed(PushOutcome::Stale, 9, 11),
        pushed(PushOutcome::Applied, 6, 11),
    ]));
    assert_eq!(stale.unwrap(), PushAnswer::Dropped(9));
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
    let unreachable = worker.on_push(Err(Error::Ps(PsFault::Unreachable {
        ps: 1,
        message: "connection refused".into(),
    })));
    // Dropped at the step of the last pull; the next pull goes to the ps tasks.
    assert_eq!(unreachable.unwrap(), PushAnswer::Dropped(7));
    assert!(worker.take_prefetched().is_none());
    let lost = worker.on_push(Err(Error::Ps(PsFault::NotInitialised { ps: 0 })));
    assert_eq!(
        lost.unwrap(),
        PushAnswer::Dropped(7),
        "the chief re-initialises"
    );
    let chiefs = task(0).on_push(Err(Error::Ps(PsFault::NotInitialised { ps: 0 })));
    assert_eq!(chiefs.unwrap(), PushAnswer::Reinitialise(0));
    let missing = worker.on_push(Err(Error::Ps(PsFault::TasksMissing {
        ranks: vec![2, 7],
        message: "timed out".into(),
    })));
    let error = missing.unwrap_err();
    assert_eq!(error.to_string(), "lost worker:1, rank 7: timed out");
    let silent = worker.on_push(Err(Error::Ps(PsFault::Unresponsive {
        ps: 1,
        waited: Duration::from_secs(6),
    })));
    assert!(silent.unwrap_err().to_string().starts_with("lost ps:1"));
}
