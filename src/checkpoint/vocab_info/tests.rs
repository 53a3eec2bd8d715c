use super::*;

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn value(shape: &[usize], values: Vec<f32>) -> VariableValue {
    VariableValue {
        shape: shape.to_vec(),
        values,
    }
}

#[test]
fn rows_follow_their_entries_and_new_entries_keep_their_initial_values() {
    // Old rows: a = [1, 1], b = [2, 2], c = [3, 3], OOV = [9, 9].
    let old = value(&[4, 2], vec![1., 1., 2., 2., 3., 3., 9., 9.]);
    let info = VocabInfo::new(words("c d a"), words("a b c")).with_num_oov_buckets(1);
    let initial = vec![-1.0; 8];
    let remapped = info.remap("emb", &old, &[4, 2], &initial).unwrap();
    assert_eq!(remapped, vec![3., 3., -1., -1., 1., 1., 9., 9.]);
}

#[test]
fn columns_follow_class_names_along_axis_1() {
    // A [2 units, 3 classes] weight: class x, y, z in the checkpoint; y, w in the model.
    let old = value(&[2, 3], vec![1., 2., 3., 4., 5., 6.]);
    let info = VocabInfo::new(words("y w"), words("x y z")).with_axis(1);
    let remapped = info
        .remap("logits.weight", &old, &[2, 2], &[0.0; 4])
        .unwrap();
    assert_eq!(remapped, vec![2., 0., 5., 0.]);
    // The bias over the same classes: one dimension, axis 0.
    let bias = value(&[3], vec![7., 8., 9.]);
    let info = VocabInfo::new(words("y w"), words("x y z"));
    assert_eq!(
        info.remap("logits.bias", &bias, &[2], &[0.5; 2]).unwrap(),
        vec![8., 0.5]
    );
}

#[test]
fn shapes_that_do_not_fit_the_vocabularies_are_errors_naming_the_variable() {
    let old = value(&[3, 2], vec![0.0; 6]);
    let info = VocabInfo::new(words("a b"), words("a b c"));
    let error = |info: &VocabInfo, shape: &[usize]| {
        let initial = vec![0.0; shape.iter().product()];
        info.remap("emb", &old, shape, &initial)
            .unwrap_err()
            .to_string()
    };
    let e = error(&info, &[3, 2]);
    assert!(e.contains("warm start of 'emb': dimension 0 is 3 in the model and 3 in the checkpoint, where the vocabularies and 0 OOV bucket(s) give 2 and 3"), "{e}");
    let e = error(&info, &[2, 5]);
    assert!(
        e.contains(
            "shape [2, 5] in the model, [3, 2] in the checkpoint: only dimension 0 may differ"
        ),
        "{e}"
    );
    let e = error(&info.clone().with_axis(2), &[2, 2]);
    assert!(
        e.contains("axis 2, but the variable has shape [2, 2]"),
        "{e}"
    );
}

#[test]
fn vocabulary_files_hold_one_entry_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let (new, old) = (dir.path().join("new.txt"), dir.path().join("old.txt"));
    std::fs::write(&new, "b\na\n").unwrap();
    std::fs::write(&old, "a\nb\nc\n").unwrap();
    let info = VocabInfo::from_files(&new, &old).unwrap();
    assert_eq!(
        (info.new_vocab, info.old_vocab),
        (words("b a"), words("a b c"))
    );
    let missing = VocabInfo::from_files(&dir.path().join("none.txt"), &old).unwrap_err();
    assert!(missing.to_string().contains("none.txt"), "{missing}");
}

#[test]
fn with_no_entry_in_common_the_model_keeps_its_own_values_whatever_the_shapes() {
    // Another column's table held this place: nothing is carried over.
    let old = value(&[3, 4], vec![9.0; 12]);
    let info = VocabInfo::new(words("p q"), words("a b c"));
    let initial = vec![0.5, 1.5, 2.5, 3.5];
    assert_eq!(info.remap("emb", &old, &[2, 2], &initial).unwrap(), initial);
}
