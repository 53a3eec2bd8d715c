//! Schedules run without a transport, for their tests: every rank's messages in one thread.

use std::collections::{HashMap, VecDeque};

use super::{Action, Combine};

/// Runs every rank's `actions` over its buffer in one thread, each rank as far as its
/// messages allow, until all finish; panics on a deadlock or a message never received.
/// Also returns the most messages one rank ever had in flight at once.
pub(super) fn run_schedules(
    inputs: Vec<Vec<f32>>,
    actions: Vec<Vec<Action>>,
) -> (Vec<Vec<f32>>, usize) {
    let n = inputs.len();
    let mut next = vec![0; n];
    let mut bufs = inputs;
    let mut mail: HashMap<(usize, usize, u64), VecDeque<Vec<f32>>> = HashMap::new();
    let (mut in_flight, mut most_in_flight) = (vec![0usize; n], 0);
    while (0..n).any(|r| next[r] < actions[r].len()) {
        let mut progressed = false;
        for r in 0..n {
            while let Some(action) = actions[r].get(next[r]) {
                match action {
                    Action::Send { to, tag, range } => {
                        let key = (r, *to, tag.encode());
                        let payload = bufs[r][range.clone()].to_vec();
                        mail.entry(key).or_default().push_back(payload);
                        in_flight[r] += 1;
                        most_in_flight = most_in_flight.max(in_flight[r]);
                    }
                    Action::Recv {
                        from,
                        tag,
                        range,
                        combine,
                    } => {
                        let key = (*from, r, tag.encode());
                        let Some(payload) = mail.get_mut(&key).and_then(|q| q.pop_front()) else {
                            break;
                        };
                        assert_eq!(payload.len(), range.len());
                        in_flight[*from] -= 1;
                        for (d, v) in bufs[r][range.clone()].iter_mut().zip(payload) {
                            match combine {
                                Combine::Add => *d += v,
                                Combine::Copy => *d = v,
                            }
                        }
                    }
                }
                next[r] += 1;
                progressed = true;
            }
        }
        assert!(progressed, "deadlock: {next:?}");
    }
    assert!(mail.values().all(VecDeque::is_empty), "unreceived messages");
    (bufs, most_in_flight)
}
