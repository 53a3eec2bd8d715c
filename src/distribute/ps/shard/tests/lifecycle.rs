//! Initialisation, the job's end, and a silent chief: pulls wait for the chief's
//! initialisation, updates stop at the last step, the ps exits once the job is done or
//! failed.

use super::*;

/// Chief silent for a minute (two before its first call): the job failed; five seconds for
/// the training tasks to hear of it or to leave.
const PATIENCE: Patience = Patience {
    chief_timeout: Duration::from_secs(60),
    startup_timeout: Duration::from_secs(120),
    grace: Duration::from_secs(5),
};

fn pulled_step(progress: Progress<Pulled, PendingPull>) -> (u64, u64) {
    match answered(progress).unwrap() {
        Pulled::Values {
            step, generation, ..
        } => (step, generation),
        Pulled::Done => panic!("the job is not done"),
    }
}

#[test]
fn a_pull_waits_for_the_chief_until_its_deadline() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    let chief = answered(shard.pull(0, Pull::default(), t0)).err();
    assert_eq!(
        chief,
        Some(ShardFault::NotInitialised),
        "the chief does not wait"
    );
    let early = waiting(shard.pull(1, waits(seconds(5)), t0));
    let early = waiting(shard.poll_pull(early, t0 + seconds(4)));
    let error = answered(shard.poll_pull(early, t0 + seconds(5))).err();
    assert_eq!(error, Some(ShardFault::NotInitialised));
    let pull = waiting(shard.pull(2, waits(seconds(30)), t0 + seconds(6)));
    let before = shard.changes();
    shard
        .init(
            Init {
                global_step: 40,
                ..init(3, 0)
            },
            t0 + seconds(7),
        )
        .unwrap();
    assert_ne!(shard.changes(), before, "the waiting pull is to be polled");
    assert_eq!(
        pulled_step(shard.poll_pull(pull, t0 + seconds(7))),
        (40, GENERATION)
    );
}

#[test]
fn a_pull_asking_for_a_newer_initialisation_waits_for_it_until_its_deadline() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 0), t0).unwrap();
    let newer = |wait| Pull {
        wait,
        min_generation: Some(GENERATION + 1),
        since: None,
    };
    let held = waiting(shard.pull(1, newer(seconds(5)), t0));
    let held = waiting(shard.poll_pull(held, t0 + seconds(4)));
    // Past its deadline it gets the values this ps holds: the training task sees its ps
    // tasks still disagree.
    assert_eq!(
        pulled_step(shard.poll_pull(held, t0 + seconds(5))),
        (0, GENERATION)
    );
    let held = waiting(shard.pull(1, newer(seconds(30)), t0 + seconds(6)));
    let next = Init {
        global_step: 9,
        generation: GENERATION + 1,
        ..init(2, 0)
    };
    shard.init(next, t0 + seconds(7)).unwrap();
    assert_eq!(
        pulled_step(shard.poll_pull(held, t0 + seconds(7))),
        (9, GENERATION + 1)
    );
    // An older generation than the ps holds is no reason to wait.
    let older = Pull {
        min_generation: Some(GENERATION),
        since: None,
        ..Pull::default()
    };
    assert_eq!(pulled_step(shard.pull(1, older, t0 + seconds(8))).0, 9);
}

#[test]
fn pushes_from_another_initialisation_are_answered_reinitialised() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    let refused = answered(shard.push(push(0, 0, 1.0), t0)).err();
    assert_eq!(refused, Some(ShardFault::NotInitialised));
    shard.init(init(2, 0), t0).unwrap();
    let old = Push {
        generation: GENERATION - 1,
        ..push(1, 0, 1.0)
    };
    assert_eq!(
        outcome(shard.push(old, t0)),
        (PushOutcome::Reinitialised, 0)
    );
    assert_eq!(shard.counters().pushes_dropped, 0, "not counted as dropped");
}

#[test]
fn an_initialisation_with_another_optimizer_is_refused() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    let adam = Init {
        optimizer: "adam".into(),
        ..init(1, 0)
    };
    let error = shard.init(adam, t0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the chief trains with optimizer 'adam', this ps task was started with 'sgd'"
    );
}

#[test]
fn updates_stop_at_the_last_step_and_pulls_end_at_the_finish() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard
        .init(
            Init {
                last_step: 2,
                ..init(2, 0)
            },
            t0,
        )
        .unwrap();
    let outcomes: Vec<PushOutcome> = (0..3)
        .map(|step| outcome(shard.push(push(1, step, 1.0), t0)).0)
        .collect();
    assert_eq!(
        outcomes,
        [
            PushOutcome::Applied,
            PushOutcome::Applied,
            PushOutcome::Done
        ]
    );
    assert_eq!(pulled_step(shard.pull(1, Pull::default(), t0)).0, 2);
    shard.control(0, Command::Finish, t0).unwrap();
    assert!(matches!(
        answered(shard.pull(1, Pull::default(), t0)),
        Ok(Pulled::Done)
    ));
    assert_eq!(
        outcome(shard.push(push(1, 2, 1.0), t0)).0,
        PushOutcome::Done
    );
}

#[test]
fn a_silent_chief_fails_the_job_after_the_timeout_not_before() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 0), t0).unwrap();
    // Training tasks' calls do not keep the chief alive; its heartbeats do.
    let _ = shard.pull(1, Pull::default(), t0 + seconds(30));
    shard
        .control(0, Command::Heartbeat, t0 + seconds(40))
        .unwrap();
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(99)), Verdict::Serve);
    assert_eq!(shard.failure(), None);
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(100)), Verdict::Serve);
    let lost = ShardFault::ChiefLost {
        chief: "chief:0".into(),
        silent_for: seconds(60),
    };
    assert_eq!(shard.failure(), Some(lost.clone()));
    assert_eq!(lost.to_string(), "no call from it for 60s");
    // The ps task waits for the training tasks to hear of it.
    let told = answered(shard.pull(1, Pull::default(), t0 + seconds(101))).err();
    assert_eq!(told, Some(lost.clone()));
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(102)), Verdict::Serve);
    let told = answered(shard.push(push(2, 0, 1.0), t0 + seconds(103))).err();
    assert_eq!(told, Some(lost.clone()));
    assert_eq!(
        shard.supervise(PATIENCE, t0 + seconds(103)),
        Verdict::Failed(lost)
    );
}

#[test]
fn the_chief_has_the_startup_timeout_for_its_first_call() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(119)), Verdict::Serve);
    assert_eq!(shard.failure(), None);
    shard.supervise(PATIENCE, t0 + seconds(120));
    assert!(shard.failure().is_some());
    assert!(
        matches!(
            shard.supervise(PATIENCE, t0 + seconds(120)),
            Verdict::Failed(ShardFault::ChiefLost { .. })
        ),
        "before an initialisation no training task is known to wait for"
    );
}

#[test]
fn training_tasks_that_never_call_are_waited_for_only_the_grace() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 0), t0).unwrap();
    shard.supervise(PATIENCE, t0 + seconds(60));
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(64)), Verdict::Serve);
    assert!(matches!(
        shard.supervise(PATIENCE, t0 + seconds(65)),
        Verdict::Failed(_)
    ));
}

#[test]
fn a_waiting_synchronous_push_hears_of_the_lost_chief() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 2), t0).unwrap();
    let pending = waiting(shard.push(push(1, 0, 1.0), t0));
    shard.supervise(PATIENCE, t0 + seconds(60));
    let error = answered(shard.poll_push(pending, t0 + seconds(60))).err();
    assert!(matches!(error, Some(ShardFault::ChiefLost { .. })));
    assert!(
        matches!(
            shard.supervise(PATIENCE, t0 + seconds(60)),
            Verdict::Failed(_)
        ),
        "worker 1, the only training task besides the chief, was told"
    );
}

#[test]
fn the_task_exits_once_the_training_tasks_left_after_the_shutdown() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 0), t0).unwrap();
    shard.control(0, Command::Finish, t0).unwrap();
    shard.control(0, Command::Shutdown, t0).unwrap();
    shard.control(1, Command::Leave, t0).unwrap();
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(1)), Verdict::Serve);
    shard.control(2, Command::Leave, t0 + seconds(2)).unwrap();
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(2)), Verdict::Done);
    // A training task that never leaves is waited for only the grace.
    let mut shard = super::shard(t0);
    shard.init(init(3, 0), t0).unwrap();
    shard.control(0, Command::Shutdown, t0).unwrap();
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(4)), Verdict::Serve);
    assert_eq!(shard.supervise(PATIENCE, t0 + seconds(5)), Verdict::Done);
}

#[test]
fn a_ps_that_was_stopped_itself_does_not_count_its_pause_as_the_chief_s_silence() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 0), t0).unwrap();
    assert_eq!(shard.supervise(PATIENCE, t0), Verdict::Serve);
    // Stopped for 5 minutes: the first check after it sees the gap, not a silent chief.
    let resumed = t0 + seconds(300);
    assert_eq!(shard.supervise(PATIENCE, resumed), Verdict::Serve);
    assert!(shard.failure().is_none());
    // Checked every 100 ms from then on, the chief's real silence still counts.
    let mut now = resumed;
    while now < resumed + seconds(61) {
        now += Duration::from_millis(100);
        let _ = shard.supervise(PATIENCE, now);
    }
    assert!(matches!(
        shard.failure(),
        Some(ShardFault::ChiefLost { .. })
    ));
}
