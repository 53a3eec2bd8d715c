//! Synchronous updates: `replicas_to_aggregate` gradients averaged per step, backup workers
//! dropped, tasks that leave no longer waited for.

use super::*;

#[test]
fn a_step_averages_the_first_gradients_and_drops_the_backup_workers() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 2), t0).unwrap();
    let before = shard.changes();
    let second = waiting(shard.push(push(1, 0, 2.0), t0));
    assert_eq!(
        shard.changes(),
        before,
        "one gradient of two changes nothing"
    );
    // The second gradient completes the update: its own push is answered at once.
    assert_eq!(
        outcome(shard.push(push(0, 0, 1.0), t0)),
        (PushOutcome::Applied, 1)
    );
    assert_ne!(shard.changes(), before, "the waiting push is to be polled");
    assert_eq!(
        outcome(shard.poll_push(second, t0)),
        (PushOutcome::Applied, 1)
    );
    // Worker 2, a backup, comes too late for step 0.
    assert_eq!(
        outcome(shard.push(push(2, 0, 100.0), t0)),
        (PushOutcome::Stale, 1)
    );
    assert_eq!(values(&mut shard, t0)["a"], vec![-1.5; 4]);
    let counters = shard.counters();
    assert_eq!((counters.pushes_applied, counters.pushes_dropped), (2, 1));
    assert_eq!(counters.step, 1);
}

#[test]
fn the_mean_does_not_depend_on_arrival_order() {
    let t0 = Instant::now();
    let gradients = [0.1f32, 0.7, 1e-3, 3.3];
    let mut results = Vec::new();
    for order in [[0, 1, 2, 3], [3, 1, 0, 2], [2, 3, 1, 0]] {
        let mut shard = shard(t0);
        shard.init(init(4, 4), t0).unwrap();
        for &w in &order {
            let _ = shard.push(push(w, 0, gradients[w as usize]), t0);
        }
        results.push(values(&mut shard, t0)["a"].clone());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
}

#[test]
fn a_push_that_gathers_too_few_gradients_times_out_naming_the_missing_and_withdraws() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 2), t0).unwrap();
    let first = waiting(shard.push(push(0, 0, 1.0), t0));
    assert_eq!(first.deadline(), t0 + seconds(10));
    let first = waiting(shard.poll_push(first, t0 + seconds(9)));
    let error = answered(shard.poll_push(first, t0 + seconds(10)))
        .err()
        .unwrap();
    assert_eq!(
        error,
        ShardFault::SyncTimeout {
            missing: vec![1],
            worker: 0,
            step: 0,
            gathered: 1,
            needed: 2,
            wait: seconds(10),
        }
    );
    assert_eq!(
        error.to_string(),
        "step 0 gathered 1 of the 2 gradients it needs within 10s; no gradient from \
         training task rank(s) [1]"
    );
    // The withdrawn gradient does not count towards the step.
    let _ = waiting(shard.push(push(1, 0, 1.0), t0 + seconds(11)));
    assert_eq!(shard.counters().step, 0);
}

#[test]
fn a_task_leaving_lowers_the_count_so_nobody_waits_for_it() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 3), t0).unwrap();
    let chief = waiting(shard.push(push(0, 0, 1.0), t0));
    let worker = waiting(shard.push(push(1, 0, 2.0), t0));
    shard.control(2, Command::Leave, t0).unwrap();
    for pending in [chief, worker] {
        assert_eq!(
            outcome(shard.poll_push(pending, t0)),
            (PushOutcome::Applied, 1)
        );
    }
    assert_eq!(values(&mut shard, t0)["a"], vec![-1.5; 4]);
    // Once worker 1 left too, the chief's gradient is an update by itself.
    shard.control(1, Command::Leave, t0).unwrap();
    assert_eq!(
        outcome(shard.push(push(0, 1, 1.0), t0)),
        (PushOutcome::Applied, 2)
    );
    assert_eq!(shard.counters().pushes_applied, 3);
}

#[test]
fn a_push_for_a_step_not_reached_is_refused_naming_the_worker() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 2), t0).unwrap();
    let error = answered(shard.push(push(1, 3, 1.0), t0)).err().unwrap();
    assert_eq!(
        error.to_string(),
        "worker 1 pushed gradients for step 3, but the variables are at step 0"
    );
}

#[test]
fn waiting_pushes_hear_of_a_reinitialisation_and_of_the_finish() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 2), t0).unwrap();
    let before = waiting(shard.push(push(1, 0, 1.0), t0));
    shard
        .init(
            Init {
                generation: GENERATION + 1,
                ..init(2, 2)
            },
            t0,
        )
        .unwrap();
    assert_eq!(
        outcome(shard.poll_push(before, t0)),
        (PushOutcome::Reinitialised, 0)
    );
    let pending = waiting(shard.push(
        Push {
            generation: GENERATION + 1,
            pull: true,
            ..push(1, 0, 1.0)
        },
        t0,
    ));
    shard.control(0, Command::Finish, t0).unwrap();
    let pushed = answered(shard.poll_push(pending, t0)).unwrap();
    assert_eq!(pushed.outcome, PushOutcome::Done);
    assert!(
        pushed.variables.is_empty(),
        "a finished job sends no values"
    );
}

#[test]
fn a_task_that_left_and_pushes_again_is_waited_for_again() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 2), t0).unwrap();
    // The worker failed and left; the chief's gradients are updates by themselves.
    shard.control(1, Command::Leave, t0).unwrap();
    assert_eq!(
        outcome(shard.push(push(0, 0, 1.0), t0)),
        (PushOutcome::Applied, 1)
    );
    // Its restarted incarnation pushes: step 1 waits for both gradients again, as on every
    // other ps, which would otherwise count steps at another pace.
    let worker = waiting(shard.push(push(1, 1, 2.0), t0));
    assert_eq!(
        outcome(shard.push(push(0, 1, 1.0), t0)),
        (PushOutcome::Applied, 2)
    );
    assert_eq!(
        outcome(shard.poll_push(worker, t0)),
        (PushOutcome::Applied, 2)
    );
    // A re-initialisation keeps a task that left out until it calls again.
    shard.control(1, Command::Leave, t0).unwrap();
    let mut again = init(2, 2);
    again.generation = GENERATION;
    again.global_step = 2;
    shard.init(again, t0).unwrap();
    assert_eq!(
        outcome(shard.push(push(0, 2, 1.0), t0)),
        (PushOutcome::Applied, 3)
    );
}
