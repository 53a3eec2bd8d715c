//! `dnn-classifier train` options that change how training runs: Mirrored replicas, warm
//! start, learning-rate schedules, a weight column, evaluation thresholds.

use std::path::Path;

use estimator::summary::{EventKind, Value};

use crate::cli::{
    assert_success_saying, assert_user_error, bin, iris, last_json, run, stderr, stdout,
    train_iris, train_iris_adam, train_on_iris,
};

#[test]
fn mirrored_replicas_in_one_process_train_to_the_accuracy_bar() {
    let dir = tempfile::tempdir().unwrap();
    let train = |mirrored: &str, threads: &str, model_dir: &Path| {
        let flags = ["--mirrored", mirrored, "--intra-op-threads", threads];
        train_iris_adam(
            model_dir,
            &[&flags[..], &["--batch-size", "16", "--max-steps", "300"]].concat(),
        )
    };
    let output = train("2", "1", &dir.path().join("two"));
    assert_success_saying(
        &output,
        &[
            "over 2 replica(s)",
            "1 CPU thread(s) per operation in each of 2 replicas",
        ],
    );
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 300);
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");
    // On the CPU `all` is one replica.
    let output = train("all", "3", &dir.path().join("all"));
    assert_success_saying(
        &output,
        &["over 1 replica(s)", "3 CPU thread(s) per operation"],
    );
}

/// The `run_config.json` a run saved in `model_dir`.
fn saved_run_config(model_dir: &Path) -> serde_json::Value {
    let saved = std::fs::read_to_string(model_dir.join("run_config.json")).unwrap();
    serde_json::from_str(&saved).unwrap()
}

#[test]
fn backward_passes_per_step_add_up_batches_into_each_update() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--batch-size", "8", "--backward-passes-per-step", "4"];
    let output = train_iris_adam(dir.path(), &[&flags[..], &["--max-steps", "150"]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 150, "{metrics}");
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");
    let saved = saved_run_config(dir.path());
    assert_eq!(saved["backward_passes_per_step"], 4, "{saved}");
}

#[test]
fn mirrored_replicas_train_to_the_accuracy_bar_with_gradients_compressed_to_rank_one() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--batch-size",
        "16",
        "--mirrored",
        "2",
        "--intra-op-threads",
        "1",
    ];
    let low_rank = ["--powersgd-rank", "1", "--powersgd-start-step", "20"];
    let output = train_iris_adam(
        dir.path(),
        &[&flags[..], &low_rank, &["--max-steps", "300"]].concat(),
    );
    assert_success_saying(
        &output,
        &["PowerSGD from step 20 of this run: 3 gradient matrices"],
    );
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 300, "{metrics}");
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");
    assert!(
        metrics["sync_low_rank_secs_per_step"].as_f64().unwrap() > 0.0,
        "{metrics}"
    );
    let saved = saved_run_config(dir.path());
    assert_eq!(saved["power_sgd"]["rank"], 1, "{saved}");
    assert_eq!(saved["power_sgd"]["start_step"], 20, "{saved}");
}

#[test]
fn mirrored_replicas_write_the_timeline_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.json");
    let output = run(bin()
        .args(train_on_iris())
        .args(["--mirrored", "2", "--max-steps", "8", "--timeline"])
        .arg(&path)
        .args(["--timeline-steps", "2,3", "--model-dir"])
        .arg(dir.path().join("model")));
    assert!(output.status.success(), "{}", stderr(&output));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let steps: Vec<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "sync")
        .map(|e| e["args"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [2, 3, 4]);
}

#[test]
fn warm_start_carries_the_trained_weights_or_the_selected_ones() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    let trained = train_iris(&source, 300);
    assert!(trained.status.success(), "{}", stderr(&trained));
    let accuracy = last_json(&trained)["accuracy"].clone();
    let warm = |name: &str, extra: &[&str]| {
        run(bin()
            .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
            .args([&iris("iris_test.csv"), "--label-column", "label"])
            .args([
                "--max-steps",
                "1",
                "--optimizer",
                "sgd",
                "--learning-rate",
                "0",
            ])
            .args(["--warm-start-from", source.to_str().unwrap(), "--model-dir"])
            .arg(dir.path().join(name))
            .args(["--json"])
            .args(extra))
    };
    // Every variable, then one step that changes nothing: the source's accuracy.
    let all = warm("all", &[]);
    assert_success_saying(&all, &["warm-started 6 variable(s)"]);
    assert_eq!(last_json(&all)["accuracy"], accuracy);
    // Run again, it resumes from its own checkpoint instead, saying so.
    let resumed = warm("all", &[]);
    assert_success_saying(
        &resumed,
        &[
            "no warm start from",
            "resumes from its own checkpoint (step 1)",
        ],
    );
    assert!(!stderr(&resumed).contains("warm-started"));
    // The hidden layers only: the logits layer stays fresh.
    let hidden = warm("hidden", &["--warm-start-vars", "hidden"]);
    assert_success_saying(&hidden, &["warm-started 4 variable(s)"]);
    // Another architecture: a one-line error naming the variable and both shapes.
    let other = warm("other", &["--hidden-units", "32,64"]);
    assert_user_error(
        other,
        "variable 'hidden.0.bias' has shape [128], the model's 'hidden.0.bias' [32]",
    );
}

#[test]
fn a_warm_start_from_other_data_follows_each_category_to_its_row() {
    // Categories in byte order: blue, green, red in the source; blue, red, yellow here. The
    // same count, so positions alone would hand red the row green trained.
    let dir = tempfile::tempdir().unwrap();
    let csv = |name: &str, colours: &[(&str, usize)]| {
        let path = dir.path().join(name);
        let mut text = String::from("x,colour,label\n");
        for (i, (colour, count)) in colours.iter().enumerate() {
            for k in 0..*count {
                text += &format!("{}.5,{colour},{}\n", k + i, (k + i) % 2);
            }
        }
        std::fs::write(&path, text).unwrap();
        path
    };
    let source_csv = csv("a.csv", &[("red", 6), ("green", 3), ("blue", 1)]);
    let target_csv = csv("b.csv", &[("blue", 6), ("red", 3), ("yellow", 1)]);
    let train = |train: &Path, model: &Path, extra: &[&str]| {
        let output = run(bin()
            .args(["train", "--train"])
            .arg(train)
            .args(["--label-column", "label", "--hidden-units", "4"])
            .args(["--batch-size", "5", "--model-dir"])
            .arg(model)
            .args(extra));
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    let (source, target) = (dir.path().join("a"), dir.path().join("b"));
    train(&source_csv, &source, &["--max-steps", "20"]);
    let frozen = [
        "--max-steps",
        "1",
        "--optimizer",
        "sgd",
        "--learning-rate",
        "0",
    ];
    let from = ["--warm-start-from", source.to_str().unwrap()];
    let warmed = train(&target_csv, &target, &[&frozen[..], &from].concat());
    let logs = stderr(&warmed);
    let followed = "the 5 entries of 'hidden.0.weight' along dimension 0 take the values of the \
                    same names (4 found in the model warmed from)";
    assert!(logs.contains(followed), "{logs}");

    let names = |model: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(model.join("dnn_classifier.json")).unwrap();
        let classifier: estimators::DnnClassifier = serde_json::from_str(&text).unwrap();
        classifier.network().columns.dense_input_names()
    };
    let rows = |model: &Path| -> Vec<Vec<f32>> {
        let weight = estimator::checkpoint::load_variable(model, "hidden.0.weight").unwrap();
        weight
            .values
            .chunks(weight.shape[1])
            .map(<[f32]>::to_vec)
            .collect()
    };
    let (before, after) = (names(&source), names(&target));
    let colours = |names: &[&str]| -> Vec<String> {
        let named = names.iter().map(|n| format!("colour_indicator={n}"));
        let oov = std::iter::once("colour_indicator#oov0".to_string());
        std::iter::once("x".to_string())
            .chain(named)
            .chain(oov)
            .collect()
    };
    assert_eq!(before, colours(&["blue", "green", "red"]));
    assert_eq!(after, colours(&["blue", "red", "yellow"]));
    let (trained, started) = (rows(&source), rows(&target));
    for (i, name) in after.iter().enumerate() {
        match before.iter().position(|b| b == name) {
            Some(j) => assert_eq!(started[i], trained[j], "{name}"),
            None => assert!(!trained.contains(&started[i]), "{name}: a fresh row"),
        }
    }
}

/// `dir/colours.csv`: a number, the colour of each of `colours` and a label, one row each.
fn colours_csv(dir: &Path, colours: &[&str]) -> std::path::PathBuf {
    let csv = dir.join("colours.csv");
    let mut text = String::from("x,colour,label\n");
    for (i, colour) in colours.iter().enumerate() {
        text += &format!("{i}.5,{colour},{}\n", i % 2);
    }
    std::fs::write(&csv, text).unwrap();
    csv
}

#[test]
fn a_vocabulary_file_gives_a_category_its_ids_and_a_resumed_model_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let csv = colours_csv(
        dir.path(),
        &["red", "green", "blue", "red", "green", "purple"],
    );
    let listed = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        format!("colour={}", path.display())
    };
    // Yellow is never seen; blue and purple are not listed, so they share the OOV id.
    let vocabulary = listed("colours.txt", "red\r\nyellow\ngreen\n");
    let model = dir.path().join("model");
    let train = |steps: &str, flag: &str| {
        run(bin()
            .args(["train", "--train"])
            .arg(&csv)
            .args(["--label-column", "label", "--hidden-units", "4"])
            .args(["--batch-size", "3", "--max-steps", steps, "--model-dir"])
            .arg(&model)
            .args(["--vocabulary-file", flag]))
    };
    let trained = train("5", &vocabulary);
    assert!(trained.status.success(), "{}", stderr(&trained));
    let text = std::fs::read_to_string(model.join("dnn_classifier.json")).unwrap();
    let classifier: estimators::DnnClassifier = serde_json::from_str(&text).unwrap();
    let names = classifier.network().columns.dense_input_names();
    let expected = ["x", "colour_indicator=red", "colour_indicator=yellow"];
    let expected = [
        &expected[..],
        &["colour_indicator=green", "colour_indicator#oov0"],
    ]
    .concat();
    assert_eq!(names, expected);

    let resumed = train("8", &vocabulary);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let other = listed("other.txt", "red\ngreen\n");
    let refused = train("10", &other);
    let text = stderr(&refused);
    assert_user_error(
        refused,
        &format!("--vocabulary-file {other} (2 values: red, green), but"),
    );
    assert!(
        text.contains("trained with colour as 3 values: red, yellow, green"),
        "{text}"
    );

    let fresh = |flag: &str| {
        let model = tempfile::tempdir().unwrap();
        run(bin()
            .args(["train", "--train"])
            .arg(&csv)
            .args(["--label-column", "label", "--max-steps", "1", "--model-dir"])
            .arg(model.path())
            .args(["--vocabulary-file", flag]))
    };
    let twice = listed("twice.txt", "red\ngreen\nred\n");
    let at = format!(
        "{}: line 3: 'red' is listed twice (first on line 1)",
        &twice[7..]
    );
    assert_user_error(fresh(&twice), &at);
    let numeric = format!("x={}", &vocabulary[7..]);
    let not_categorical = "--vocabulary-file x: no categorical feature 'x' (the categorical \
                           features: colour)";
    assert_user_error(fresh(&numeric), not_categorical);
    assert_user_error(fresh("colour"), "'colour' is not COLUMN=FILE");
}

#[test]
fn an_embedding_dimension_feeds_a_category_as_a_learned_vector_kept_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let csv = colours_csv(
        dir.path(),
        &["red", "green", "blue", "red", "purple", "green"],
    );
    let run_with = |model: &Path, steps: &str, flag: &str| {
        run(bin()
            .args(["train", "--train"])
            .arg(&csv)
            .args(["--label-column", "label", "--hidden-units", "4"])
            .args(["--batch-size", "3", "--max-steps", steps, "--model-dir"])
            .arg(model)
            .args(["--embedding-dimension", flag]))
    };
    let model = dir.path().join("model");
    let trained = run_with(&model, "5", "colour=2");
    assert!(trained.status.success(), "{}", stderr(&trained));
    let text = std::fs::read_to_string(model.join("dnn_classifier.json")).unwrap();
    let classifier: estimators::DnnClassifier = serde_json::from_str(&text).unwrap();
    let names = classifier.network().columns.input_names();
    assert_eq!(names, ["x", "colour_embedding#0", "colour_embedding#1"]);
    // A row for each colour seen (blue, green, purple, red) and one for any other.
    let table = estimator::checkpoint::load_variable(&model, "input.embeddings.0.weight");
    assert_eq!(table.unwrap().shape, [5, 2]);

    let resumed = run_with(&model, "8", "colour=2");
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let wider = run_with(&model, "10", "colour=3");
    let text = stderr(&wider);
    assert_user_error(wider, "--embedding-dimension colour=3, but the model in");
    assert!(
        text.contains("trained with colour embedded in 2 values"),
        "{text}"
    );

    let fresh = dir.path().join("fresh");
    let numeric = "--embedding-dimension x: no categorical feature 'x' (the categorical \
                   features: colour)";
    assert_user_error(run_with(&fresh, "1", "x=2"), numeric);
    assert_user_error(
        run_with(&fresh, "1", "colour=0"),
        "'colour=0' is not COLUMN=N",
    );
}

#[test]
fn a_warm_start_to_more_classes_keeps_each_class_s_logit() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target) = (dir.path().join("three"), dir.path().join("four"));
    let trained = train_iris(&source, 50);
    assert!(trained.status.success(), "{}", stderr(&trained));
    let warmed = run(bin()
        .args([
            "train",
            "--train",
            &iris("iris_train.csv"),
            "--label-column",
            "label",
        ])
        .args(["--n-classes", "4", "--max-steps", "1", "--optimizer", "sgd"])
        .args([
            "--learning-rate",
            "0",
            "--warm-start-from",
            source.to_str().unwrap(),
        ])
        .arg("--model-dir")
        .arg(&target));
    assert_success_saying(
        &warmed,
        &[
            "the 4 entries of 'logits.weight' along dimension 1 take the values of the same names \
           (3 found",
        ],
    );
    let load =
        |model: &Path, name: &str| estimator::checkpoint::load_variable(model, name).unwrap();
    let (before, after) = (
        load(&source, "logits.weight"),
        load(&target, "logits.weight"),
    );
    assert_eq!((before.shape[1], after.shape[1]), (3, 4));
    for (old, new) in before.values.chunks(3).zip(after.values.chunks(4)) {
        assert_eq!(old, &new[..3]);
    }
    let (before, after) = (load(&source, "logits.bias"), load(&target, "logits.bias"));
    assert_eq!(before.values[..], after.values[..3]);
}

#[test]
fn a_learning_rate_schedule_with_warm_up_trains_and_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = ["--learning-rate-schedule", "cosine_decay:decay_steps=270"];
    let warm_up = ["--warmup-steps", "30", "--max-steps", "300"];
    let output = train_iris_adam(dir.path(), &[&schedule[..], &warm_up].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(last_json(&output)["accuracy"].as_f64().unwrap() >= 0.90);
    let events = estimator::summary::event_files(dir.path()).unwrap();
    let events = estimator::summary::read_event_file(&events[0]).unwrap();
    let mut rates: Vec<(u64, f64)> = Vec::new();
    for event in &events {
        if let EventKind::Summary(values) = &event.what {
            for v in values.iter().filter(|v| v.tag == "learning_rate") {
                if let Value::Simple(x) = v.value {
                    rates.push((event.step as u64, x as f64));
                }
            }
        }
    }
    // Step 1 came from the warm-up's first step (1/30 of the rate); step 100 from the
    // cosine's step 69 (update 99 − 30 warm-up steps); step 300 nearly its floor.
    let at = |step| rates.iter().find(|(s, _)| *s == step).unwrap().1;
    assert!((at(1) - 0.01 / 30.0).abs() < 1e-6, "{rates:?}");
    assert!(
        (at(100) - 0.01 * 0.5 * (1.0 + (std::f64::consts::PI * 69.0 / 270.0).cos())).abs() < 1e-6,
        "{rates:?}"
    );
    assert!(at(300) < 1e-5, "{rates:?}");
}

#[test]
fn gradient_clipping_flags_train_and_a_bad_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let train = |name: &str, clip: &[&str]| {
        train_iris_adam(
            &dir.path().join(name),
            &[&["--max-steps", "300"], clip].concat(),
        )
    };
    let clipped = train(
        "clipped",
        &[
            "--clip-global-norm",
            "1.0",
            "--clip-value",
            "0.5",
            "--l2-regularization",
            "0.001",
        ],
    );
    assert!(clipped.status.success(), "{}", stderr(&clipped));
    assert!(last_json(&clipped)["accuracy"].as_f64().unwrap() >= 0.90);
    let saved = std::fs::read_to_string(dir.path().join("clipped/dnn_classifier.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(
        saved["optimizer"]["clipping"],
        serde_json::json!({"global_norm": 1.0, "value": 0.5}),
        "{saved}"
    );
    assert_eq!(
        saved["optimizer"]["regularization"],
        serde_json::json!({"l1": 0.0, "l2": 0.001}),
        "{saved}"
    );
    assert_user_error(
        train("bad", &["--clip-norm=-1"]),
        "gradient clipping: norm -1 must be finite and positive",
    );
}

#[test]
fn prefetch_to_device_moves_batch_building_off_the_training_thread_without_changing_results() {
    let dir = tempfile::tempdir().unwrap();
    let train = |prefetch: &str, threads: &str| {
        let output = run(bin()
            .env("RUST_LOG", "info,estimator::run_loop::device_input=debug")
            .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
            .args([&iris("iris_test.csv"), "--label-column", "label"])
            .args([
                "--optimizer",
                "adam",
                "--batch-size",
                "16",
                "--max-steps",
                "60",
            ])
            .args([
                "--prefetch-to-device",
                prefetch,
                "--intra-op-threads",
                threads,
            ])
            .arg("--model-dir")
            .arg(dir.path().join(format!("{prefetch}-{threads}")))
            .arg("--json"));
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    let runs = [
        (train("0", "2"), "built on the training thread"),
        (
            train("3", "1"),
            "built 3 batch(es) ahead on device-prefetch",
        ),
        (
            train("3", "2"),
            "built 3 batch(es) ahead by the CPU pool's threads",
        ),
    ];
    for (output, line) in &runs {
        assert!(stderr(output).contains(line), "{}", stderr(output));
    }
    let first = last_json(&runs[0].0);
    for (output, line) in &runs[1..] {
        let metrics = last_json(output);
        for metric in ["loss", "accuracy", "global_step"] {
            assert_eq!(metrics[metric], first[metric], "{metric} ({line})");
        }
    }
}

#[test]
fn a_fresh_run_trains_from_the_rows_its_statistics_pass_read_and_resumes_as_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let train = |model_dir: &Path, steps: &str| {
        let output = run(bin()
            .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
            .args([&iris("iris_test.csv"), "--label-column", "label"])
            .args(["--optimizer", "adam", "--batch-size", "16"])
            .args(["--max-steps", steps, "--model-dir"])
            .arg(model_dir)
            .arg("--json"));
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    const KEPT: &str = "training starts from the 120 rows the statistics pass kept in memory";
    let whole = train(&dir.path().join("one"), "20");
    assert!(stderr(&whole).contains(KEPT), "{}", stderr(&whole));
    // Stopped inside the first epoch (7.5 steps of 16 rows), then resumed: the resumed run
    // has no statistics pass and reads the file from the checkpoint's position on.
    let split = dir.path().join("two");
    assert!(stderr(&train(&split, "5")).contains(KEPT));
    let resumed = train(&split, "20");
    assert!(!stderr(&resumed).contains(KEPT), "{}", stderr(&resumed));
    let (whole, resumed) = (last_json(&whole), last_json(&resumed));
    for metric in ["loss", "accuracy", "global_step"] {
        assert_eq!(whole[metric], resumed[metric], "{metric}");
    }
}

#[test]
fn a_weight_column_weights_the_loss_and_prediction_does_not_need_it() {
    let dir = tempfile::tempdir().unwrap();
    // Iris with a leading weight column: 0 for every example of class 2, 1 for the others.
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let weighted: String = rows
        .lines()
        .map(|row| match row.ends_with(",2") {
            true => format!("0,{row}\n"),
            false => format!("1,{row}\n"),
        })
        .collect();
    let train_csv = dir.path().join("weighted.csv");
    std::fs::write(&train_csv, format!("weight,{header}\n{weighted}")).unwrap();
    let model_dir = dir.path().join("model");
    let trained = run(bin()
        .args(["train", "--train"])
        .arg(&train_csv)
        .args(["--label-column", "label", "--weight-column", "weight"])
        .args([
            "--optimizer",
            "adam",
            "--learning-rate",
            "0.01",
            "--max-steps",
            "300",
        ])
        .arg("--model-dir")
        .arg(&model_dir));
    assert!(trained.status.success(), "{}", stderr(&trained));

    // Predicted from files without the weight column: class 2 weighed nothing in training,
    // so it is never predicted, where the same training unweighted predicts it 10 times.
    let predict = |model_dir: &Path| {
        let output = run(bin()
            .args(["predict", "--input", &iris("iris_test.csv"), "--model-dir"])
            .arg(model_dir));
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output).matches(r#""class_ids":[2]"#).count()
    };
    assert_eq!(predict(&model_dir), 0);
    let unweighted = dir.path().join("unweighted");
    let trained = train_iris_adam(&unweighted, &["--max-steps", "300"]);
    assert!(trained.status.success(), "{}", stderr(&trained));
    assert!(predict(&unweighted) >= 8);
    // Evaluation weighs its examples, so it needs the column.
    let evaluated = run(bin()
        .args(["evaluate", "--eval", &iris("iris_test.csv"), "--model-dir"])
        .arg(&model_dir));
    assert_user_error(evaluated, "iris_test.csv: header has no column 'weight'");
}

#[test]
fn early_stopping_ends_train_and_evaluate_once_the_loss_stops_decreasing() {
    let dir = tempfile::tempdir().unwrap();
    let train_and_evaluate = |name: &str, extra: &[&str]| {
        run(bin()
            .args([
                "train-and-evaluate",
                "--train",
                &iris("iris_train.csv"),
                "--eval",
            ])
            .args([&iris("iris_test.csv"), "--label-column", "label", "--json"])
            .args(["--optimizer", "adam", "--learning-rate", "0.05"])
            .args(["--max-steps", "10000", "--save-checkpoints-steps", "100"])
            .arg("--model-dir")
            .arg(dir.path().join(name))
            .args(extra))
    };
    // Adam at 0.05 overfits Iris within a few hundred steps: the evaluated loss turns up.
    let stopped = train_and_evaluate("stopped", &["--stop-if-no-decrease", "loss:300"]);
    assert_success_saying(
        &stopped,
        &["early stopping: loss has not improved for 300 steps"],
    );
    let step = last_json(&stopped)["global_step"].as_u64().unwrap();
    assert!(step < 10_000, "{step}");
    // Not before the minimum step asked for.
    let later = train_and_evaluate(
        "later",
        &[
            "--stop-if-no-decrease",
            "loss:300",
            "--early-stopping-min-steps",
            "1500",
        ],
    );
    assert!(later.status.success(), "{}", stderr(&later));
    let later_step = last_json(&later)["global_step"].as_u64().unwrap();
    assert!((1500..10_000).contains(&later_step), "{later_step}");

    // Past a threshold: the first evaluation with an accuracy above 0.8 ends training.
    let good_enough = train_and_evaluate("good_enough", &["--stop-if-higher", "accuracy:0.8"]);
    assert_success_saying(&good_enough, &["early stopping: at step", "accuracy = "]);
    let stopped_at = last_json(&good_enough)["global_step"].as_u64().unwrap();
    assert!(stopped_at < 10_000, "{stopped_at}");
    let both = train_and_evaluate(
        "both",
        &[
            "--stop-if-higher",
            "accuracy:0.8",
            "--stop-if-lower",
            "loss:0.1",
        ],
    );
    assert_user_error(both, "--stop-if-lower");
    let misnamed = train_and_evaluate("misnamed", &["--stop-if-no-increase", "acc:300"]);
    assert_user_error(misnamed, "report no metric 'acc' (they report: accuracy,");
    // With the default cadence, evaluations come every 600 s: said, as it rarely is wanted.
    let by_time = run(bin()
        .args([
            "train-and-evaluate",
            "--train",
            &iris("iris_train.csv"),
            "--eval",
        ])
        .args([
            &iris("iris_test.csv"),
            "--label-column",
            "label",
            "--max-steps",
            "5",
        ])
        .args(["--stop-if-no-decrease", "loss:100", "--model-dir"])
        .arg(dir.path().join("by_time")));
    assert_success_saying(
        &by_time,
        &["every 600 s by default: --save-checkpoints-steps N"],
    );
    let without_evaluations = run(bin()
        .args(train_on_iris())
        .args([
            "--max-steps",
            "5",
            "--stop-if-no-decrease",
            "loss:5",
            "--model-dir",
        ])
        .arg(dir.path().join("train")));
    assert_user_error(
        without_evaluations,
        "early stopping judges the evaluations of train-and-evaluate",
    );
}

#[test]
fn thresholds_add_metrics_kept_with_the_model_and_an_evaluation_may_replace_them() {
    let dir = tempfile::tempdir().unwrap();
    // 200 rows: positive when x is above 0.2.
    let data = dir.path().join("binary.csv");
    let rows: String = (0..200)
        .map(|i| {
            let x = f64::from(i) / 100.0 - 1.0;
            format!("{x},{}\n", u8::from(x > 0.2))
        })
        .collect();
    std::fs::write(&data, format!("x,label\n{rows}")).unwrap();
    let (data, model) = (data.to_str().unwrap(), dir.path().join("m"));
    let model = model.to_str().unwrap();
    let trained = run(bin()
        .args(["train-and-evaluate", "--train", data, "--eval", data])
        .args(["--label-column", "label", "--max-steps", "60", "--json"])
        .args(["--thresholds", "0.3,0.7", "--model-dir", model]));
    assert!(trained.status.success(), "{}", stderr(&trained));
    let metrics = last_json(&trained);
    for name in ["accuracy", "precision", "recall"] {
        for t in ["0.3", "0.7"] {
            let key = format!("{name}/positive_threshold_{t}");
            assert!(metrics[&key].is_number(), "{key}: {metrics}");
        }
    }
    // A later evaluation keeps them, or evaluates at the ones it is given instead.
    let evaluate = |extra: &[&str]| {
        let output = run(bin()
            .args(["evaluate", "--eval", data, "--model-dir", model, "--json"])
            .args(extra));
        assert!(output.status.success(), "{}", stderr(&output));
        last_json(&output)
    };
    let kept = evaluate(&[]);
    assert_eq!(
        kept["recall/positive_threshold_0.7"],
        metrics["recall/positive_threshold_0.7"]
    );
    let replaced = evaluate(&["--thresholds", "0.5"]);
    assert!(
        replaced.get("recall/positive_threshold_0.7").is_none(),
        "{replaced}"
    );
    for name in ["accuracy", "precision", "recall"] {
        let at = &replaced[format!("{name}/positive_threshold_0.5")];
        assert_eq!(at, &replaced[name], "{replaced}");
    }

    let output = run(bin()
        .args(train_on_iris())
        .args(["--max-steps", "5", "--thresholds", "0.5", "--model-dir"])
        .arg(dir.path().join("iris")));
    assert_user_error(
        output,
        "--thresholds: invalid configuration: thresholds are for a binary classifier: this one \
         has 3 classes",
    );
    let output = run(bin()
        .args(["evaluate", "--eval", data, "--model-dir", model])
        .args(["--thresholds", "0.5,1"]));
    assert_user_error(output, "threshold 1 must be above 0 and below 1");
}

#[test]
fn a_summed_loss_is_kept_with_the_model_and_reported_as_the_sum_over_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let output = train_iris_adam(dir.path(), &["--max-steps", "5", "--loss-reduction", "sum"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // The evaluation's one batch holds Iris' 30 test rows: its loss is their sum, and
    // `average_loss` their mean, as TF's head reports them with SUM.
    let metrics = last_json(&output);
    let ratio = metrics["loss"].as_f64().unwrap() / metrics["average_loss"].as_f64().unwrap();
    assert!((ratio - 30.0).abs() < 1e-3, "{metrics}");
    let saved = std::fs::read_to_string(dir.path().join("dnn_classifier.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(saved["loss_reduction"], "sum");
    let output = run(bin()
        .args(train_on_iris())
        .args([
            "--max-steps",
            "5",
            "--loss-reduction",
            "mean",
            "--model-dir",
        ])
        .arg(dir.path().join("other")));
    assert_user_error(output, "invalid value 'mean' for '--loss-reduction");
}
