use super::*;
use crate::combinators::collect;
use crate::{from_vec, DatasetExt, VecDataset};

fn inputs() -> Vec<VecDataset<u32>> {
    vec![
        from_vec((0..300).collect()),
        from_vec((1000..1100).collect()),
        from_vec((2000..2010).collect()),
    ]
}

#[test]
fn picks_by_weight_and_yields_every_item_once() {
    let items = collect(sample_from_datasets(inputs(), vec![3.0, 1.0, 0.0], 7));
    // Weight 0: never read; the others read to the end, each in its own order.
    assert_eq!(items.len(), 400);
    let of = |range: std::ops::Range<u32>| -> Vec<u32> {
        items
            .iter()
            .copied()
            .filter(|x| range.contains(x))
            .collect()
    };
    assert_eq!(of(0..300), (0..300).collect::<Vec<_>>());
    assert_eq!(of(1000..1100), (1000..1100).collect::<Vec<_>>());
    // While both are live, about three picks in four are the first's: of the first 200
    // items, 150 expected (σ ≈ 6).
    let first = items[..200].iter().filter(|x| **x < 300).count();
    assert!((125..=175).contains(&first), "{first}");
    // The same seed picks the same; another seed, another order.
    assert_eq!(
        collect(sample_from_datasets(inputs(), vec![3.0, 1.0, 0.0], 7)),
        items
    );
    assert_ne!(
        collect(sample_from_datasets(inputs(), vec![3.0, 1.0, 0.0], 8)),
        items
    );
}

#[test]
fn stops_at_the_first_input_to_end_when_asked() {
    let ds = sample_from_datasets(inputs(), vec![1.0, 1.0, 1.0], 3).stop_on_empty_dataset(true);
    assert_eq!(ds.len_hint(), None);
    let items = collect(ds);
    // The third input (10 items) ends first, long before the others.
    assert_eq!(items.iter().filter(|x| **x >= 2000).count(), 10);
    assert!(items.len() < 100, "{}", items.len());
    let all = sample_from_datasets(inputs(), vec![1.0, 1.0, 1.0], 3);
    assert_eq!(all.len_hint(), Some(410));
}

#[test]
fn restores_mid_way_and_reseeds_under_repeat() {
    let make = || sample_from_datasets(inputs(), vec![1.0, 2.0, 4.0], 11);
    for taken in [0, 1, 17, 40, 409, 410] {
        let mut ds = make();
        for _ in 0..taken {
            ds.next_item().unwrap().unwrap();
        }
        let position = ds.position();
        let json = serde_json::to_string(&position).unwrap();
        let rest = collect(ds);
        let mut fresh = make();
        fresh
            .restore(&serde_json::from_str(&json).unwrap())
            .unwrap();
        assert_eq!(collect(fresh), rest, "after {taken} items");
    }
    let epochs = collect(make().repeat(Some(2)));
    assert_eq!(epochs.len(), 820);
    assert_ne!(
        epochs[..410],
        epochs[410..],
        "another order the second epoch"
    );
    let mut sorted = epochs[410..].to_vec();
    sorted.sort_unstable();
    let mut first = epochs[..410].to_vec();
    first.sort_unstable();
    assert_eq!(sorted, first);
}

#[test]
fn bad_weights_and_positions_are_errors() {
    let first_error = |weights: Vec<f64>| {
        let mut ds = sample_from_datasets(inputs(), weights, 1);
        let error = ds.next_item().unwrap().unwrap_err().to_string();
        assert!(ds.next_item().is_none());
        error
    };
    assert!(first_error(vec![1.0]).contains("1 weights for 3 datasets"));
    assert!(first_error(vec![1.0, -1.0, 1.0]).contains("weight 1 is -1"));
    assert!(first_error(vec![1.0, f64::NAN, 1.0]).contains("weight 1 is NaN"));
    assert!(first_error(vec![0.0; 3]).contains("every weight is 0"));

    let two = sample_from_datasets(inputs()[..2].to_vec(), vec![1.0, 1.0], 1).position();
    let mut three = sample_from_datasets(inputs(), vec![1.0; 3], 1);
    let error = three.restore(&two).unwrap_err().to_string();
    assert!(
        error.contains("a sample_from position of 2 datasets, restored into one of 3"),
        "{error}"
    );
    let error = three.restore(&Position::Index(0)).unwrap_err().to_string();
    assert!(error.contains("expected a sample_from position"), "{error}");
}
