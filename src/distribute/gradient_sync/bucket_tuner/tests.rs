//! The trials' schedule and the vote, with made-up timings.

use super::{BucketTuner, TunedStep};

/// Runs `tuner` through `steps` steps that each synchronise for `seconds(bucket_bytes)`;
/// the bucket sizes it ran with.
fn run(tuner: &mut BucketTuner, steps: usize, seconds: impl Fn(usize) -> f64) -> Vec<usize> {
    (0..steps)
        .map(|_| {
            let step = tuner.begin();
            assert!(step.vote.is_none(), "no vote before the trials end");
            tuner.end(seconds(step.bucket_bytes));
            step.bucket_bytes
        })
        .collect()
}

#[test]
fn candidates_take_turns_after_the_warm_up_and_the_vote_follows() {
    let mut tuner = BucketTuner::new(&[100, 200, 300], 2, 2);
    let sizes = run(&mut tuner, 8, |bytes| match bytes {
        100 => 0.004,
        200 => 0.001,
        _ => 0.003,
    });
    assert_eq!(sizes, [100, 100, 100, 200, 300, 100, 200, 300]);
    // The warm-up's steps (a slow first one included) are not counted.
    let vote = tuner.begin();
    assert_eq!(vote.bucket_bytes, 100);
    let means = vote.vote.expect("the trials are over");
    assert_eq!(means.len(), 3);
    for (mean, expected) in means.iter().zip([4.0f32, 1.0, 3.0]) {
        assert!((mean - expected).abs() < 1e-4, "{means:?}");
    }
    assert_eq!(tuner.decide(&means), 200);
    tuner.end(1.0);
    assert_eq!(
        tuner.begin(),
        TunedStep {
            bucket_bytes: 200,
            vote: None
        }
    );
}

#[test]
fn ranks_timing_alike_or_not_choose_the_same_from_the_averaged_votes() {
    // Rank 0 found 100 fastest, rank 1 found 200 much faster: the mean decides for both.
    let mut ranks = [
        BucketTuner::new(&[100, 200], 0, 1),
        BucketTuner::new(&[100, 200], 0, 1),
    ];
    run(&mut ranks[0], 2, |b| if b == 100 { 0.002 } else { 0.003 });
    run(&mut ranks[1], 2, |b| if b == 100 { 0.009 } else { 0.001 });
    let votes: Vec<Vec<f32>> = ranks.iter().map(|t| t.begin().vote.unwrap()).collect();
    let mean: Vec<f32> = (0..2).map(|i| (votes[0][i] + votes[1][i]) / 2.0).collect();
    assert_eq!(ranks.each_mut().map(|t| t.decide(&mean)), [200, 200]);
    // A tie goes to the smaller size.
    let mut tuner = BucketTuner::new(&[100, 200], 0, 1);
    run(&mut tuner, 2, |_| 0.002);
    let vote = tuner.begin().vote.unwrap();
    assert_eq!(tuner.decide(&vote), 100);
}

#[test]
fn a_vote_whose_step_was_called_off_rides_the_next_step_again() {
    let mut tuner = BucketTuner::new(&[100, 200], 1, 1);
    run(&mut tuner, 3, |b| b as f64 / 1e5);
    let first = tuner.begin();
    // The step was called off: no averaged votes came back, nothing decided.
    tuner.end(5.0);
    let again = tuner.begin();
    assert_eq!(again, first, "the same vote, the late step not counted");
    assert_eq!(tuner.decide(&again.vote.unwrap()), 100);
}
