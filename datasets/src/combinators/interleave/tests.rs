use super::{interleave, Built, Interleave};
use crate::combinators::collect;
use crate::{from_vec, Dataset, DatasetExt, Error, Position};

fn inputs() -> Vec<crate::VecDataset<i32>> {
    vec![
        from_vec(vec![1, 2, 3]),
        from_vec(vec![10]),
        from_vec(vec![20, 21, 22, 23]),
    ]
}

/// `inputs()` read `cycle` at a time.
fn cycled(cycle: usize, block: usize) -> Interleave<Built<crate::VecDataset<i32>>> {
    let all = interleave(inputs(), block);
    Interleave::new(all.inputs, cycle, block)
}

#[test]
fn round_robin_in_blocks() {
    assert_eq!(interleave(inputs(), 1).len_hint(), Some(8));
    assert_eq!(
        collect(interleave(inputs(), 1)),
        vec![1, 10, 20, 2, 21, 3, 22, 23]
    );
    assert_eq!(
        collect(interleave(inputs(), 2)),
        vec![1, 2, 10, 20, 21, 3, 22, 23]
    );
    assert!(collect(interleave(Vec::<crate::VecDataset<i32>>::new(), 1)).is_empty());
}

#[test]
fn a_shorter_cycle_opens_the_next_input_where_one_ends() {
    // As tf.data: [1,2,3] and [10] in the cycle; [10] ends, and [20..] takes its slot
    // when the cycle comes back to it.
    assert_eq!(collect(cycled(2, 1)), vec![1, 10, 2, 3, 20, 21, 22, 23]);
    assert_eq!(collect(cycled(1, 1)), vec![1, 2, 3, 10, 20, 21, 22, 23]);
    assert_eq!(collect(cycled(2, 2)), vec![1, 2, 10, 3, 20, 21, 22, 23]);
    assert_eq!(collect(cycled(5, 1)), collect(interleave(inputs(), 1)));
}

#[test]
fn zero_block_or_cycle_is_an_error() {
    for mut ds in [interleave(inputs(), 0), cycled(0, 1)] {
        assert!(matches!(
            ds.next_item(),
            Some(Err(Error::InvalidArgument(_)))
        ));
        assert!(ds.next_item().is_none());
    }
}

#[test]
fn restore_mid_way() {
    for (cycle, block) in [(3, 2), (2, 1), (1, 3), (2, 2)] {
        let full = collect(cycled(cycle, block));
        for k in 0..=full.len() {
            let mut ds = cycled(cycle, block);
            for _ in 0..k {
                ds.next_item();
            }
            let pos = ds.position();
            let json = serde_json::to_string(&pos).unwrap();
            let mut fresh = cycled(cycle, block);
            fresh
                .restore(&serde_json::from_str(&json).unwrap())
                .unwrap();
            assert_eq!(collect(fresh), full[k..].to_vec(), "{cycle} {block} {k}");
            // The same pipeline, read to its end, goes back too: inputs it had finished
            // are opened again where the position says.
            ds.iter().for_each(drop);
            ds.restore(&pos).unwrap();
            assert_eq!(collect(ds), full[k..].to_vec(), "{cycle} {block} {k} again");
        }
    }
    let mut ds = interleave(inputs(), 2);
    assert!(ds.restore(&Position::Index(0)).is_err());
    let two = interleave(vec![from_vec(vec![1]), from_vec(vec![2])], 1).position();
    assert!(ds.restore(&two).is_err());
}

#[test]
fn positions_written_before_slots_were_recorded_still_restore() {
    // Every input in its own slot and open: input 1 read to its end, input 2 at 2.
    let old = r#"{"interleave": {"current": 2, "in_block": 0, "done": [false, true, false],
        "inputs": [{"index": 1}, {"index": 1}, {"index": 2}]}}"#;
    let mut ds = interleave(inputs(), 1);
    ds.restore(&serde_json::from_str(old).unwrap()).unwrap();
    assert_eq!(collect(ds), vec![22, 2, 23, 3]);
}

#[test]
fn a_position_with_one_input_in_two_slots_is_refused() {
    // Files can be opened again and again: two slots on one file would read it twice.
    let files = crate::InputFiles::new(["f0", "f1"]).unwrap();
    let open = |path: &std::path::Path| {
        let base = if path.ends_with("f0") { 0 } else { 100 };
        Ok(from_vec(vec![base, base + 1]))
    };
    let twice = r#"{"interleave": {"current": 0, "in_block": 0, "done": [false, false],
        "inputs": [{"index": 0}, {"index": 0}], "slot_inputs": [0, 0], "opened": 2}}"#;
    let mut ds = files.read(2, 1, open);
    let err = ds
        .restore(&serde_json::from_str(twice).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not fit 2 inputs in 2 slots"), "{err}");
    assert_eq!(collect(ds), vec![0, 100, 1, 101]);
}
