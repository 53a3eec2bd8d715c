//! Warm start against real checkpoint files: all variables, a regex, a list, a rename, and
//! the errors that name the variable.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;

use std::path::Path;

use super::*;
use crate::checkpoint::{contents, CheckpointManager};
use crate::device::CpuTrainBackend as Train;
use crate::optimizer::{Optimizer, OptimizerSpec};
use crate::state::parameter_values;

#[derive(Module, Debug)]
struct Two<B: Backend> {
    hidden: Linear<B>,
    logits: Linear<B>,
}

fn two(seed: u64, inputs: usize) -> Two<Train> {
    Train::seed(&Default::default(), seed);
    let device = Default::default();
    let model = Two {
        hidden: LinearConfig::new(inputs, 3).init(&device),
        logits: LinearConfig::new(3, 3).init(&device),
    };
    // Burn initialises parameters when first read: read them now, so that clones share
    // these values.
    parameter_values(&model);
    model
}

/// `model` saved as the checkpoint of step `step` in `dir`.
fn save(model: &Two<Train>, dir: &Path, step: u64) -> PathBuf {
    let optimizer = Optimizer::<Train>::new(&OptimizerSpec::sgd(0.1));
    let checkpoint = contents::snapshot(model, &optimizer, step, None).unwrap();
    CheckpointManager::new(dir, None).save(&checkpoint).unwrap()
}

fn values(model: &Two<Train>, name: &str) -> Vec<f32> {
    parameter_values(model).remove(name).unwrap().1
}

#[test]
fn every_trainable_variable_comes_from_the_latest_checkpoint_of_a_model_dir() {
    let dir = tempfile::tempdir().unwrap();
    save(&two(1, 2), dir.path(), 10);
    let trained = two(2, 2);
    save(&trained, dir.path(), 20);
    let fresh = two(3, 2);
    let started = WarmStartSettings::new(dir.path()).apply(fresh).unwrap();
    assert_eq!(parameter_values(&started), parameter_values(&trained));
}

#[test]
fn a_regex_or_a_list_selects_variables_and_the_rest_stay_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let trained = two(2, 2);
    let file = save(&trained, dir.path(), 5);
    let fresh = two(3, 2);
    let hidden_only = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::Regex("hidden".into()))
        .apply(fresh.clone())
        .unwrap();
    assert_eq!(
        values(&hidden_only, "hidden.weight"),
        values(&trained, "hidden.weight")
    );
    assert_eq!(
        values(&hidden_only, "hidden.bias"),
        values(&trained, "hidden.bias")
    );
    assert_eq!(
        values(&hidden_only, "logits.weight"),
        values(&fresh, "logits.weight")
    );
    assert_ne!(
        values(&fresh, "logits.weight"),
        values(&trained, "logits.weight")
    );

    let listed = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::List(vec!["logits.bias".into()]))
        .apply(fresh.clone())
        .unwrap();
    assert_eq!(
        values(&listed, "logits.bias"),
        values(&trained, "logits.bias")
    );
    assert_eq!(
        values(&listed, "hidden.bias"),
        values(&fresh, "hidden.bias")
    );
}

#[test]
fn a_rename_reads_another_variable_of_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let trained = two(2, 3);
    let file = save(&trained, dir.path(), 5);
    // The model's hidden layer [3, 3] from the checkpoint's logits layer [3, 3].
    let started = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::Regex("hidden".into()))
        .with_prev_var_name("hidden.weight", "logits.weight")
        .with_prev_var_name("hidden.bias", "logits.bias")
        .apply(two(3, 3))
        .unwrap();
    assert_eq!(
        values(&started, "hidden.weight"),
        values(&trained, "logits.weight")
    );
    assert_eq!(
        values(&started, "hidden.bias"),
        values(&trained, "logits.bias")
    );
}

#[test]
fn a_list_takes_a_frozen_variable_where_a_pattern_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let trained = two(2, 2);
    let file = save(&trained, dir.path(), 5);
    let frozen = |model: Two<Train>| Two {
        hidden: model.hidden.no_grad(),
        logits: model.logits,
    };
    let fresh = frozen(two(3, 2));
    let all = WarmStartSettings::new(&file).apply(fresh.clone()).unwrap();
    assert_eq!(
        values(&all, "hidden.weight"),
        values(&fresh, "hidden.weight")
    );
    assert_eq!(
        values(&all, "logits.weight"),
        values(&trained, "logits.weight")
    );
    let pattern = WarmStartSettings::new(&file).with_vars(VarsToWarmStart::Regex("hid".into()));
    let err = pattern.apply(fresh.clone()).unwrap_err().to_string();
    assert!(err.contains("selects no trainable variable"), "{err}");

    let names = vec!["hidden.weight".to_string(), "hidden.bias".to_string()];
    let listed = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::List(names))
        .apply(fresh.clone())
        .unwrap();
    assert_eq!(
        values(&listed, "hidden.weight"),
        values(&trained, "hidden.weight")
    );
    assert_eq!(
        values(&listed, "logits.weight"),
        values(&fresh, "logits.weight")
    );
    // Loaded, the frozen layer stays frozen.
    assert!(!listed.hidden.weight.val().is_require_grad());
    assert!(listed.logits.weight.val().is_require_grad());
}

#[test]
fn errors_name_the_variable_and_both_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let file = save(&two(2, 2), dir.path(), 5);
    let err = WarmStartSettings::new(&file)
        .apply(two(3, 4))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "variable 'hidden.weight' has shape [2, 3], the model's 'hidden.weight' [4, 3]"
        ),
        "{err}"
    );
    let err = WarmStartSettings::new(&file)
        .with_prev_var_name("logits.bias", "output.bias")
        .apply(two(3, 2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("variable 'output.bias' (for the model's 'logits.bias') is not in it"),
        "{err}"
    );
    let err = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::Regex("embedding".into()))
        .apply(two(3, 2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("selects no trainable variable"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let err = WarmStartSettings::new(empty.path())
        .apply(two(3, 2))
        .unwrap_err()
        .to_string();
    assert!(err.contains("holds no checkpoint"), "{err}");
}

#[test]
fn a_variable_over_a_vocabulary_follows_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    // Inputs a, b, c (the hidden weight's rows) and classes x, y, z (the logits' columns).
    let trained = two(2, 3);
    let file = save(&trained, dir.path(), 5);
    let words = |text: &str| text.split(' ').map(str::to_string).collect::<Vec<_>>();
    let fresh = two(3, 2);
    let started = WarmStartSettings::new(&file)
        .with_vocab_info(
            "hidden.weight",
            VocabInfo::new(words("c d"), words("a b c")),
        )
        .with_vocab_info(
            "logits.weight",
            VocabInfo::new(words("z x w"), words("x y z")).with_axis(1),
        )
        .with_vocab_info(
            "logits.bias",
            VocabInfo::new(words("z x w"), words("x y z")),
        )
        .apply(fresh.clone())
        .unwrap();
    // Input c's row from the checkpoint; the new input d's as the fresh model has it.
    let (old, new) = (
        values(&trained, "hidden.weight"),
        values(&fresh, "hidden.weight"),
    );
    assert_eq!(
        values(&started, "hidden.weight"),
        [&old[6..9], &new[3..6]].concat()
    );
    assert_eq!(
        values(&started, "hidden.bias"),
        values(&trained, "hidden.bias")
    );
    let (old, new) = (
        values(&trained, "logits.weight"),
        values(&fresh, "logits.weight"),
    );
    let remapped = values(&started, "logits.weight");
    for unit in 0..3 {
        let row = &remapped[unit * 3..unit * 3 + 3];
        assert_eq!(row, [old[unit * 3 + 2], old[unit * 3], new[unit * 3 + 2]]);
    }
    let (old, new) = (
        values(&trained, "logits.bias"),
        values(&fresh, "logits.bias"),
    );
    assert_eq!(values(&started, "logits.bias"), [old[2], old[0], new[2]]);

    // Vocabulary info for a variable the warm start does not take is refused.
    let error = WarmStartSettings::new(&file)
        .with_vars(VarsToWarmStart::Regex("logits".into()))
        .with_vocab_info(
            "hidden.weight",
            VocabInfo::new(words("c d"), words("a b c")),
        )
        .apply(fresh)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("'hidden.weight' has vocabulary info but is not a variable the warm"),
        "{error}"
    );
}
