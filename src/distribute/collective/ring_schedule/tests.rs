//! The ring schedule's tests: every rank's messages run in one thread.

use super::*;
use crate::distribute::collective::simulation::run_schedules;

/// Runs every rank's ring schedule in one thread ([`run_schedules`]).
fn simulate(inputs: Vec<Vec<f32>>, segment_len: usize, window: usize) -> (Vec<Vec<f32>>, usize) {
    let (n, len) = (inputs.len(), inputs[0].len());
    let actions = (0..n)
        .map(|r| {
            let schedule = RingSchedule::new(r, n, len, segment_len).unwrap();
            schedule.with_window(window).actions().collect()
        })
        .collect();
    run_schedules(inputs, actions)
}

#[test]
fn three_ranks_follow_the_textbook_ring() {
    let s = RingSchedule::new(0, 3, 9, 100).unwrap();
    assert_eq!(s.reduce_scatter_step(0), (0, 2));
    assert_eq!(s.reduce_scatter_step(1), (2, 1));
    assert_eq!(s.owned_chunk(), 1);
    assert_eq!(s.all_gather_step(0), (1, 0));
    assert_eq!(s.all_gather_step(1), (0, 2));
    let actions: Vec<_> = s.actions().collect();
    assert_eq!(actions.len(), 8);
    assert_eq!(
        actions[0],
        Action::Send {
            to: 1,
            tag: Tag::new(CollectivePhase::ReduceScatter, 0, 0),
            range: 0..3
        }
    );
    assert_eq!(
        actions[1],
        Action::Recv {
            from: 2,
            tag: Tag::new(CollectivePhase::ReduceScatter, 0, 0),
            range: 6..9,
            combine: Combine::Add
        }
    );
}

#[test]
fn a_chunk_received_is_sent_on_in_the_next_step() {
    for n in 2..6 {
        for r in 0..n {
            let s = RingSchedule::new(r, n, 100, 7).unwrap();
            let prev = RingSchedule::new((r + n - 1) % n, n, 100, 7).unwrap();
            for step in 0..s.steps() {
                assert_eq!(
                    s.reduce_scatter_step(step).1,
                    prev.reduce_scatter_step(step).0
                );
                assert_eq!(s.all_gather_step(step).1, prev.all_gather_step(step).0);
            }
            for step in 1..s.steps() {
                let received = s.reduce_scatter_step(step - 1).1;
                assert_eq!(s.reduce_scatter_step(step).0, received);
                assert_eq!(s.all_gather_step(step).0, s.all_gather_step(step - 1).1);
            }
            assert_eq!(s.all_gather_step(0).0, s.owned_chunk());
        }
    }
}

#[test]
fn every_shape_sums_exactly_without_deadlock() {
    for n in 1..=5 {
        for len in 0..=13 {
            for (segment_len, window) in (1..=4).flat_map(|s| [1, 2, 3, usize::MAX].map(|w| (s, w)))
            {
                // Small integers: every order of summation is exact.
                let inputs: Vec<Vec<f32>> = (0..n)
                    .map(|r| (0..len).map(|i| (r * 31 + i * 7 % 11) as f32).collect())
                    .collect();
                let expected: Vec<f32> = (0..len)
                    .map(|i| inputs.iter().map(|v| v[i]).sum())
                    .collect();
                let (out, _) = simulate(inputs, segment_len, window);
                for (r, buf) in out.iter().enumerate() {
                    assert_eq!(
                        buf, &expected,
                        "n={n} len={len} seg={segment_len} window={window} rank={r}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_window_bounds_what_is_in_flight() {
    // 500 segments per chunk: unbounded, a whole chunk is in flight on a link at once;
    // with a window, at most `window` segments of each hop per rank the sender can be
    // ahead of the receiver by (the simulation lets one rank run as far as it can).
    for n in 2..=5 {
        let inputs = || vec![vec![1.0; 1000 * n]; n];
        let (_, unbounded) = simulate(inputs(), 2, usize::MAX);
        assert!(unbounded >= 500, "n={n}: {unbounded}");
        for window in 1..=4 {
            let (out, most) = simulate(inputs(), 2, window);
            assert!(out.iter().flatten().all(|&v| v == n as f32));
            let bound = 2 * (n - 1) * n * window;
            assert!(most <= bound, "n={n} window={window}: {most} > {bound}");
        }
    }
}

#[test]
fn one_rank_or_an_empty_buffer_sends_nothing() {
    assert_eq!(RingSchedule::new(0, 1, 10, 1).unwrap().actions().count(), 0);
    assert_eq!(RingSchedule::new(2, 4, 0, 1).unwrap().actions().count(), 0);
    // Fewer elements than ranks: only the non-empty chunks travel.
    let s = RingSchedule::new(0, 4, 2, 1).unwrap();
    assert!(s.actions().all(|a| match a {
        Action::Send { range, .. } | Action::Recv { range, .. } => range.len() == 1,
    }));
}

#[test]
fn segments_split_chunks_and_tags_number_them() {
    let s = RingSchedule::new(1, 2, 10, 2).unwrap();
    let sends: Vec<_> = s
        .actions()
        .filter_map(|a| match a {
            Action::Send { tag, range, .. } if tag.phase == CollectivePhase::ReduceScatter => {
                Some((tag.segment, range))
            }
            _ => None,
        })
        .collect();
    assert_eq!(sends, vec![(0, 5..7), (1, 7..9), (2, 9..10)]);
}

/// A schedule's messages in order: `s`/`r` (send, receive), the phase, the segment.
fn order(s: RingSchedule) -> String {
    let name = |a: Action| match a {
        Action::Send { tag, .. } => format!("s{}{}", tag.phase as u8, tag.segment),
        Action::Recv { tag, .. } => format!("r{}{}", tag.phase as u8, tag.segment),
    };
    s.actions().map(name).collect::<Vec<_>>().join(" ")
}

#[test]
fn a_received_segment_is_sent_on_before_the_next_one_is_awaited() {
    // Two ranks, 4 segments per chunk: all of the first hop leaves at once, then every
    // reduced segment goes back out right after it arrived.
    let s = RingSchedule::new(0, 2, 16, 2).unwrap();
    assert_eq!(
        order(s),
        "s10 s11 s12 s13 r10 s20 r11 s21 r12 s22 r13 s23 r20 r21 r22 r23"
    );
    // A window of one segment: the first hop's next segment leaves as one arrives, and
    // each hop's receives trail the hop before by one.
    assert_eq!(
        order(s.with_window(1)),
        "s10 r10 s20 s11 r20 r11 s21 s12 r21 r12 s22 s13 r22 r13 s23 r23"
    );
    assert!(s.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 0, 3)));
    assert!(!s.completes_reduction(Tag::new(CollectivePhase::AllGather, 0, 3)));
    let four = RingSchedule::new(0, 4, 16, 2).unwrap();
    assert!(!four.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 1, 0)));
    assert!(four.completes_reduction(Tag::new(CollectivePhase::ReduceScatter, 2, 0)));
}

#[test]
fn bad_arguments_are_refused() {
    assert!(RingSchedule::new(2, 2, 1, 1).is_err());
    assert!(RingSchedule::new(0, 0, 1, 1).is_err());
    assert!(RingSchedule::new(0, 2, 1, 0).is_err());
}
