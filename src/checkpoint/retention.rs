//! Retention policy: which checkpoints to delete after a save. Pure, no file access.

use std::collections::BTreeSet;

/// The checkpoints to delete from `retained` (oldest first), oldest first.
///
/// Keeps the newest `keep_max` entries; `None` or `Some(0)` keeps everything, like TensorFlow's
/// `keep_checkpoint_max`. A `pinned` entry (e.g. one an evaluator is reading) is never deleted:
/// it stays retained past its turn, on top of the `keep_max` newest, until a later call finds it
/// unpinned.
pub fn checkpoints_to_delete(
    retained: &[String],
    keep_max: Option<usize>,
    pinned: &BTreeSet<String>,
) -> Vec<String> {
    let keep = match keep_max {
        None | Some(0) => return Vec::new(),
        Some(keep) => keep,
    };
    let excess = retained.len().saturating_sub(keep);
    retained[..excess]
        .iter()
        .filter(|name| !pinned.contains(*name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(steps: &[u64]) -> Vec<String> {
        steps.iter().map(|s| format!("ckpt-{s}.ckpt")).collect()
    }

    fn pins(steps: &[u64]) -> BTreeSet<String> {
        names(steps).into_iter().collect()
    }

    #[test]
    fn keeps_all_when_unlimited() {
        let retained = names(&[1, 2, 3, 4, 5]);
        assert!(checkpoints_to_delete(&retained, None, &pins(&[])).is_empty());
        assert!(checkpoints_to_delete(&retained, Some(0), &pins(&[])).is_empty());
    }

    #[test]
    fn keeps_the_newest_n() {
        let retained = names(&[1, 2, 3, 4, 5]);
        assert_eq!(
            checkpoints_to_delete(&retained, Some(2), &pins(&[])),
            names(&[1, 2, 3])
        );
        assert_eq!(
            checkpoints_to_delete(&retained, Some(1), &pins(&[])),
            names(&[1, 2, 3, 4])
        );
        assert!(checkpoints_to_delete(&retained, Some(5), &pins(&[])).is_empty());
        assert!(checkpoints_to_delete(&retained, Some(9), &pins(&[])).is_empty());
        assert!(checkpoints_to_delete(&[], Some(1), &pins(&[])).is_empty());
    }

    #[test]
    fn never_deletes_a_pinned_checkpoint() {
        let retained = names(&[1, 2, 3, 4, 5]);
        assert_eq!(
            checkpoints_to_delete(&retained, Some(2), &pins(&[2])),
            names(&[1, 3])
        );
        assert_eq!(
            checkpoints_to_delete(&retained, Some(1), &pins(&[1, 2, 3, 4, 5])),
            names(&[])
        );
        // Pinning one of the kept ones changes nothing.
        assert_eq!(
            checkpoints_to_delete(&retained, Some(2), &pins(&[5])),
            names(&[1, 2, 3])
        );
        // Once unpinned, a checkpoint kept past its turn goes at the next call.
        let after = names(&[2, 4, 5, 6]);
        assert_eq!(
            checkpoints_to_delete(&after, Some(2), &pins(&[])),
            names(&[2, 4])
        );
    }
}
