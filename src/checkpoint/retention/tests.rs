use super::*;

fn names(steps: &[u64]) -> Vec<String> {
    steps.iter().map(|s| format!("ckpt-{s}.ckpt")).collect()
}

fn pins(steps: &[u64]) -> BTreeSet<String> {
    names(steps).into_iter().collect()
}

/// Saved one hour apart, from hour 1.
fn hourly(count: usize) -> Vec<f64> {
    (1..=count).map(|h| h as f64 * 3600.0).collect()
}

fn keep(keep_max: Option<usize>) -> Retention {
    Retention {
        keep_max,
        keep_every_secs: None,
    }
}

fn deleted(retained: &[String], retention: Retention, pinned: &BTreeSet<String>) -> Vec<String> {
    let pruning = prune(retained, &hourly(retained.len()), retention, pinned, 0.0);
    assert!(pruning.preserve.is_empty());
    pruning.delete
}

#[test]
fn keeps_all_when_unlimited() {
    let retained = names(&[1, 2, 3, 4, 5]);
    assert!(deleted(&retained, keep(None), &pins(&[])).is_empty());
    assert!(deleted(&retained, keep(Some(0)), &pins(&[])).is_empty());
}

#[test]
fn keeps_the_newest_n() {
    let retained = names(&[1, 2, 3, 4, 5]);
    assert_eq!(
        deleted(&retained, keep(Some(2)), &pins(&[])),
        names(&[1, 2, 3])
    );
    assert_eq!(
        deleted(&retained, keep(Some(1)), &pins(&[])),
        names(&[1, 2, 3, 4])
    );
    assert!(deleted(&retained, keep(Some(5)), &pins(&[])).is_empty());
    assert!(deleted(&retained, keep(Some(9)), &pins(&[])).is_empty());
    assert!(deleted(&[], keep(Some(1)), &pins(&[])).is_empty());
}

#[test]
fn never_deletes_a_pinned_checkpoint() {
    let retained = names(&[1, 2, 3, 4, 5]);
    assert_eq!(
        deleted(&retained, keep(Some(2)), &pins(&[2])),
        names(&[1, 3])
    );
    assert!(deleted(&retained, keep(Some(1)), &pins(&[1, 2, 3, 4, 5])).is_empty());
    // Pinning one of the kept ones changes nothing.
    assert_eq!(
        deleted(&retained, keep(Some(2)), &pins(&[5])),
        names(&[1, 2, 3])
    );
    // Once unpinned, a checkpoint kept past its turn goes at the next call.
    let after = names(&[2, 4, 5, 6]);
    assert_eq!(deleted(&after, keep(Some(2)), &pins(&[])), names(&[2, 4]));
}

#[test]
fn keeps_one_for_good_every_n_hours_of_those_falling_out() {
    // Saved at hours 1..=8; keep the newest 2, and one every 3 hours from hour 0.
    let retained = names(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let retention = Retention {
        keep_max: Some(2),
        keep_every_secs: Some(3.0 * 3600.0),
    };
    let pruning = prune(&retained, &hourly(8), retention, &pins(&[]), 0.0);
    assert_eq!(pruning.preserve, names(&[3, 6]));
    assert_eq!(pruning.delete, names(&[1, 2, 4, 5]));
    assert_eq!(pruning.last_preserved, 6.0 * 3600.0);

    // The next call goes on from the last one preserved: hours 7 and 8 are too soon after 6.
    let later = names(&[7, 8, 9, 10]);
    let times = [7.0, 8.0, 9.0, 10.0].map(|h| h * 3600.0);
    let pruning = prune(
        &later,
        &times,
        retention,
        &pins(&[]),
        pruning.last_preserved,
    );
    assert_eq!(pruning.preserve, names(&[]));
    assert_eq!(pruning.delete, names(&[7, 8]));
    assert_eq!(pruning.last_preserved, 6.0 * 3600.0);

    // A pinned checkpoint is not a candidate yet, so the next in turn is preserved.
    let pruning = prune(&retained, &hourly(8), retention, &pins(&[3]), 0.0);
    assert_eq!(pruning.preserve, names(&[4]));
    assert_eq!(pruning.delete, names(&[1, 2, 5, 6]));
}

#[test]
fn keeping_every_checkpoint_preserves_none() {
    let retention = Retention {
        keep_max: None,
        keep_every_secs: Some(1.0),
    };
    let pruning = prune(&names(&[1, 2, 3]), &hourly(3), retention, &pins(&[]), 0.0);
    assert_eq!(pruning, Pruning::default());
}
