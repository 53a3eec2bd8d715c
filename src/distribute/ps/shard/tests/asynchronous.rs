//! Asynchronous updates: every push applied on arrival, unless older than the staleness
//! bound; requests that do not fit the variables refused, naming what is wrong.

use super::*;

#[test]
fn the_staleness_bound_drops_old_gradients_and_counts_them() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard
        .init(
            Init {
                max_staleness: Some(1),
                ..init(1, 0)
            },
            t0,
        )
        .unwrap();
    let outcomes: Vec<(PushOutcome, u64)> = [0, 0, 0, 3]
        .into_iter()
        .map(|step| outcome(shard.push(push(0, step, 1.0), t0)))
        .collect();
    // Pulled at 0: applied at 0 (staleness 0) and 1 (staleness 1); at 2 it is 2 steps old.
    assert_eq!(
        outcomes,
        vec![
            (PushOutcome::Applied, 1),
            (PushOutcome::Applied, 2),
            (PushOutcome::Stale, 2),
            (PushOutcome::Applied, 3),
        ]
    );
    let counters = shard.counters();
    assert_eq!(
        (
            counters.pushes_applied,
            counters.pushes_dropped,
            counters.staleness_sum
        ),
        (3, 1, 1)
    );
    assert_eq!(values(&mut shard, t0)["a"], vec![-3.0; 4]);
}

#[test]
fn without_a_bound_every_gradient_is_applied_however_old() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(2, 0), t0).unwrap();
    for _ in 0..5 {
        assert_eq!(
            outcome(shard.push(push(1, 0, 1.0), t0)).0,
            PushOutcome::Applied
        );
    }
    let counters = shard.counters();
    assert_eq!((counters.step, counters.staleness_sum), (5, 1 + 2 + 3 + 4));
}

#[test]
fn a_push_answers_with_the_values_after_it_and_assigns_as_it_is() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(1, 0), t0).unwrap();
    let statistics = vec![0.5, 1.5, 2.5, 3.5, 4.5, 5.5];
    let pushed = answered(shard.push(
        Push {
            pull: true,
            assign: vec![("b".into(), statistics.clone())],
            ..push(0, 0, 1.0)
        },
        t0,
    ))
    .unwrap();
    let pulled: BTreeMap<String, Vec<f32>> = pushed.variables.into_iter().collect();
    assert_eq!(pulled["a"], vec![-1.0; 4]);
    assert_eq!(pulled["b"], statistics);
    let counters = shard.counters();
    assert_eq!(
        counters.bytes_received, 40,
        "the gradient's and the assigned bytes"
    );
    assert_eq!(counters.bytes_served, 40, "both variables' bytes");
}

#[test]
fn a_pull_since_a_version_answers_only_what_changed_after_it() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(1, 0), t0).unwrap();
    let paths = |values: &Values| values.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    let since = |version| Held {
        generation: GENERATION,
        version,
    };
    let Pulled::Values { version, .. } = answered(shard.pull(0, Pull::default(), t0)).unwrap()
    else {
        panic!("the job is not over");
    };
    // An update of `a`: `b` stays as the task holds it.
    let updated = Push {
        pull: true,
        since: Some(since(version)),
        ..push(0, 0, 1.0)
    };
    let updated = answered(shard.push(updated, t0)).unwrap();
    assert_eq!(paths(&updated.variables), ["a"]);
    assert_eq!(updated.variables[0].1, vec![-1.0; 4]);
    // An assignment of `b` alone.
    let assigned = Push {
        pull: true,
        since: Some(since(updated.version)),
        gradients: Vec::new(),
        assign: vec![("b".into(), vec![2.0; 6])],
        ..push(0, 1, 1.0)
    };
    let assigned = answered(shard.push(assigned, t0)).unwrap();
    assert_eq!(paths(&assigned.variables), ["b"]);
    let served = shard.counters().bytes_served;
    let pull = |since| Pull {
        since: Some(since),
        ..Pull::default()
    };
    let Pulled::Values { variables, .. } =
        answered(shard.pull(0, pull(since(assigned.version)), t0)).unwrap()
    else {
        panic!("the job is not over");
    };
    assert!(variables.is_empty(), "nothing changed: {variables:?}");
    assert_eq!(shard.counters().bytes_served, served);
    // Values of another initialisation, or of a version this ps never reached: all of them.
    let other = Held {
        generation: GENERATION + 1,
        version: assigned.version,
    };
    for held in [other, since(assigned.version + 1)] {
        let Pulled::Values { variables, .. } = answered(shard.pull(0, pull(held), t0)).unwrap()
        else {
            panic!("the job is not over");
        };
        assert_eq!(paths(&variables), ["a", "b"], "since {held:?}");
    }
}

#[test]
fn gradients_that_do_not_fit_are_refused_naming_the_variable_and_the_worker() {
    let t0 = Instant::now();
    let mut shard = shard(t0);
    shard.init(init(3, 0), t0).unwrap();
    let unknown = Push {
        gradients: vec![("c".into(), vec![1.0])],
        ..push(2, 0, 1.0)
    };
    let error = answered(shard.push(unknown, t0)).err().unwrap();
    assert_eq!(
        error.to_string(),
        "gradient for c, which this ps does not hold (from worker 2)"
    );
    let short = Push {
        gradients: vec![("b".into(), vec![1.0; 5])],
        ..push(1, 0, 1.0)
    };
    let error = answered(shard.push(short, t0)).err().unwrap();
    assert_eq!(
        error,
        ShardFault::WrongSize {
            worker: 1,
            path: "b".into(),
            shape: vec![2, 3],
            got: 5,
            expected: 6,
        }
    );
    assert_eq!(shard.counters().step, 0, "nothing was applied");
}
