//! How a buffer is cut into ring chunks and segments, and which ranks exist.

use std::ops::Range;

use crate::distribute::collective_fault::{CollectiveFault, Result};

/// Part `i` of `len` elements cut into `parts` near-equal parts (the first `len % parts` parts
/// one element longer).
pub(super) fn part(len: usize, parts: usize, i: usize) -> Range<usize> {
    let (base, extra) = (len / parts, len % parts);
    let start = |i: usize| i * base + i.min(extra);
    start(i)..start(i + 1)
}

/// How many segments of at most `segment` elements cover `range`.
pub(super) fn segment_count(range: &Range<usize>, segment: usize) -> usize {
    range.len().div_ceil(segment)
}

/// Segment `k` of at most `segment` elements of `range`.
pub(super) fn segment(range: &Range<usize>, segment: usize, k: usize) -> Range<usize> {
    let start = range.start + k * segment;
    start..(start + segment).min(range.end)
}

/// An error unless `rank` is one of `world_size` ranks; `what` names the rank's role.
pub(super) fn check_rank(what: &str, rank: usize, world_size: usize) -> Result<()> {
    if rank >= world_size {
        return Err(CollectiveFault::invalid(format!(
            "{what} {rank} is not a rank of a world of {world_size}"
        )));
    }
    Ok(())
}

/// An error unless segments of `segment_len` elements hold at least one.
pub(super) fn check_segment_len(segment_len: usize) -> Result<()> {
    if segment_len == 0 {
        return Err(CollectiveFault::invalid(
            "segments must hold at least one element",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_buffer_in_order_and_differ_by_at_most_one() {
        for len in 0..20 {
            for parts in 1..6 {
                let ranges: Vec<_> = (0..parts).map(|i| part(len, parts, i)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[parts - 1].end, len);
                for w in ranges.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                    assert!(w[0].len() >= w[1].len() && w[0].len() <= w[1].len() + 1);
                }
            }
        }
        assert_eq!(part(7, 3, 0), 0..3);
        assert_eq!(part(7, 3, 2), 5..7);
        assert_eq!(part(2, 4, 3), 2..2);
    }

    #[test]
    fn segments_cover_a_range() {
        let range = 3..10;
        assert_eq!(segment_count(&range, 3), 3);
        let segs: Vec<_> = (0..3).map(|k| segment(&range, 3, k)).collect();
        assert_eq!(segs, vec![3..6, 6..9, 9..10]);
        assert_eq!(segment_count(&(4..4), 3), 0);
    }

    #[test]
    fn ranks_outside_the_world_are_refused() {
        assert!(check_rank("root", 1, 2).is_ok());
        let err = check_rank("root", 2, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "distribute: root 2 is not a rank of a world of 2"
        );
    }
}
