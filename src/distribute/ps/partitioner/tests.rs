use super::*;

fn shapes(list: &[(&str, &[usize])]) -> BTreeMap<String, Vec<usize>> {
    list.iter()
        .map(|(p, s)| (p.to_string(), s.to_vec()))
        .collect()
}

fn partitioner(min_shard_bytes: u64, max_shards: usize) -> MinSizePartitioner {
    MinSizePartitioner {
        min_shard_bytes,
        max_shards: Some(max_shards),
    }
}

#[test]
fn blocks_as_tf_counts_them() {
    // TF's own cases: a [6, 1] float variable with 4-byte blocks, at most 2 or 10.
    assert_eq!(partitioner(4, 2).shards(&[6, 1], 1), 2);
    assert_eq!(partitioner(4, 10).shards(&[6, 1], 1), 6);
    // 1024 × 1024 floats in 256 KiB blocks: 16, or the bound.
    let default = MinSizePartitioner::DEFAULT_MIN_SHARD_BYTES;
    assert_eq!(partitioner(default, 32).shards(&[1024, 1024], 1), 16);
    assert_eq!(partitioner(default, 3).shards(&[1024, 1024], 1), 3);
    // Rounded up: just over one block is two.
    assert_eq!(partitioner(400, 8).shards(&[101], 1), 2);
    assert_eq!(partitioner(400, 8).shards(&[100], 1), 1);
    // Without a bound, one block per ps task at most.
    let per_ps = MinSizePartitioner::new(4);
    assert_eq!(per_ps.shards(&[64, 64], 3), 3);
    assert_eq!(
        per_ps.shards(&[64, 64], 0),
        1,
        "no ps task still means one block"
    );
    assert_eq!(per_ps.shards(&[], 3), 1, "a scalar is never cut");
}

#[test]
fn variables_cut_into_blocks_of_rows_and_joined_back() {
    let partitions = Partitions::new(
        Some(partitioner(8, 2)),
        &shapes(&[("w", &[5, 3]), ("b", &[1])]),
        2,
    );
    assert_eq!(
        partitions.blocks_of("w"),
        Some(vec![("w/part_0".into(), 3), ("w/part_1".into(), 2)]),
        "the first block takes the extra row, as TF's"
    );
    assert_eq!(partitions.blocks_of("b"), None, "one value stays whole");
    let w: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let shaped = Shaped::from([
        ("w".to_string(), (vec![5, 3], w.clone())),
        ("b".to_string(), (vec![1], vec![7.0])),
    ]);
    let cut = partitions.cut_shaped(shaped.clone());
    assert_eq!(cut["w/part_0"], (vec![3, 3], w[..9].to_vec()));
    assert_eq!(cut["w/part_1"], (vec![2, 3], w[9..].to_vec()));
    assert_eq!(cut["b"], (vec![1], vec![7.0]));
    let names: Vec<(String, Vec<String>)> = partitions.blocks().collect();
    assert_eq!(
        names,
        [("w".into(), vec!["w/part_0".into(), "w/part_1".into()])]
    );
    let whole = cut.into_iter().map(|(name, (_, v))| (name, v)).collect();
    let joined = partitions.join(whole, |_| BTreeMap::new()).unwrap();
    assert_eq!(joined["w"], w);

    let gradients = partitions
        .cut([("w".to_string(), w.clone()), ("b".to_string(), vec![1.0])])
        .unwrap();
    let names: Vec<&str> = gradients.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["w/part_0", "w/part_1", "b"]);
    let joined = partitions
        .join(gradients.into_iter().collect(), |_| {
            panic!("every block came: nothing to read")
        })
        .unwrap();
    assert_eq!(joined["w"], w);
    assert_eq!(joined["b"], vec![1.0]);
}

#[test]
fn blocks_that_came_alone_go_into_the_values_held() {
    let partitions = Partitions::new(Some(partitioner(4, 3)), &shapes(&[("w", &[3, 2])]), 3);
    let came = BTreeMap::from([("w/part_1".to_string(), vec![10.0, 11.0])]);
    let joined = partitions
        .join(came, |paths| {
            assert_eq!(paths.iter().collect::<Vec<_>>(), ["w"]);
            BTreeMap::from([("w".to_string(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0])])
        })
        .unwrap();
    assert_eq!(joined["w"], vec![0.0, 1.0, 10.0, 11.0, 4.0, 5.0]);
}

#[test]
fn blocks_that_do_not_fit_are_refused_by_name() {
    let partitions = Partitions::new(Some(partitioner(4, 2)), &shapes(&[("w", &[4, 2])]), 2);
    let short = BTreeMap::from([("w/part_0".to_string(), vec![1.0])]);
    let error = partitions.join(short, |_| BTreeMap::new()).unwrap_err();
    assert!(
        error.to_string().contains("'w/part_0' holds 4 values"),
        "{error}"
    );
    let alone = BTreeMap::from([("w/part_1".to_string(), vec![0.0; 4])]);
    let error = partitions.join(alone, |_| BTreeMap::new()).unwrap_err();
    assert!(error.to_string().contains("variable 'w'"), "{error}");
    let error = partitions
        .cut([("w".to_string(), vec![0.0; 7])])
        .unwrap_err();
    assert!(error.to_string().contains("'w' holds 8 values"), "{error}");
}

#[test]
fn without_a_partitioner_everything_stays_whole() {
    let partitions = Partitions::new(None, &shapes(&[("w", &[1024, 1024])]), 4);
    assert_eq!(partitions, Partitions::default());
    let values = vec![("w".to_string(), vec![1.0])];
    assert_eq!(partitions.cut(values.clone()).unwrap(), values);
    // A name like a block's is an ordinary variable of another model's.
    let lookalike = BTreeMap::from([("w/part_0".to_string(), vec![1.0])]);
    assert_eq!(
        partitions
            .join(lookalike.clone(), |_| BTreeMap::new())
            .unwrap(),
        lookalike
    );
}
