//! `dnn-classifier train` options that change how training runs: Mirrored replicas, warm
//! start, learning-rate schedules.

use std::path::Path;

use estimator::summary::{EventKind, Value};

use crate::cli::{assert_user_error, bin, iris, last_json, run, stderr, train_iris};

#[test]
fn mirrored_replicas_in_one_process_train_to_the_accuracy_bar() {
    let dir = tempfile::tempdir().unwrap();
    let train = |mirrored: &str, threads: &str, model_dir: &Path| {
        run(bin().args([
            "train",
            "--intra-op-threads",
            threads,
            "--train",
            &iris("iris_train.csv"),
            "--eval",
            &iris("iris_test.csv"),
            "--label-column",
            "label",
            "--optimizer",
            "adam",
            "--learning-rate",
            "0.01",
            "--batch-size",
            "16",
            "--max-steps",
            "300",
            "--mirrored",
            mirrored,
            "--model-dir",
            model_dir.to_str().unwrap(),
            "--json",
        ]))
    };
    let output = train("2", "1", &dir.path().join("two"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("over 2 replica(s)"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("1 CPU thread(s) per operation in each of 2 replicas"),
        "{}",
        stderr(&output)
    );
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 300);
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");
    // On the CPU `all` is one replica.
    let output = train("all", "3", &dir.path().join("all"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("over 1 replica(s)"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("3 CPU thread(s) per operation"),
        "{}",
        stderr(&output)
    );
}

/// `dnn-classifier train` on Iris with Adam at 0.01, evaluated, and `flags`, into
/// `model_dir`, printing its metrics as JSON.
fn train_iris_adam(model_dir: &Path, flags: &[&str]) -> std::process::Output {
    run(bin()
        .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
        .args([&iris("iris_test.csv"), "--label-column", "label"])
        .args(["--optimizer", "adam", "--learning-rate", "0.01", "--json"])
        .args(flags)
        .arg("--model-dir")
        .arg(model_dir))
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
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("PowerSGD from step 20 of this run: 3 gradient matrices"),
        "{}",
        stderr(&output)
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
        .args([
            "train",
            "--train",
            &iris("iris_train.csv"),
            "--label-column",
            "label",
        ])
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
    assert!(all.status.success(), "{}", stderr(&all));
    assert!(
        stderr(&all).contains("warm-started 6 variable(s)"),
        "{}",
        stderr(&all)
    );
    assert_eq!(last_json(&all)["accuracy"], accuracy);
    // The hidden layers only: the logits layer stays fresh.
    let hidden = warm("hidden", &["--warm-start-vars", "hidden"]);
    assert!(hidden.status.success(), "{}", stderr(&hidden));
    assert!(
        stderr(&hidden).contains("warm-started 4 variable(s)"),
        "{}",
        stderr(&hidden)
    );
    // Another architecture: a one-line error naming the variable and both shapes.
    let other = warm("other", &["--hidden-units", "32,64"]);
    assert_user_error(
        other,
        "variable 'hidden.0.bias' has shape [128], the model's 'hidden.0.bias' [32]",
    );
}

#[test]
fn a_learning_rate_schedule_with_warm_up_trains_and_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(bin()
        .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
        .args([
            &iris("iris_test.csv"),
            "--label-column",
            "label",
            "--max-steps",
            "300",
        ])
        .args([
            "--optimizer",
            "adam",
            "--learning-rate",
            "0.01",
            "--warmup-steps",
            "30",
        ])
        .args(["--learning-rate-schedule", "cosine_decay:decay_steps=270"])
        .args(["--model-dir", dir.path().to_str().unwrap(), "--json"]));
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
        run(bin()
            .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
            .args([
                &iris("iris_test.csv"),
                "--label-column",
                "label",
                "--max-steps",
                "300",
            ])
            .args(["--optimizer", "adam", "--learning-rate", "0.01", "--json"])
            .arg("--model-dir")
            .arg(dir.path().join(name))
            .args(clip))
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
fn a_second_run_on_a_model_directory_in_use_is_refused_and_a_dead_ones_lock_taken_over() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    use crate::cluster::Reaper;

    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let model = model_dir.to_str().unwrap().to_string();
    let train = |hidden: &str, steps: &str| {
        let mut cmd = bin();
        cmd.args([
            "train",
            "--train",
            &iris("iris_train.csv"),
            "--label-column",
            "label",
        ])
        .args([
            "--hidden-units",
            hidden,
            "--max-steps",
            steps,
            "--model-dir",
            &model,
        ]);
        cmd
    };
    let first = train("64", "100000000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = first.id();
    let mut reaper = Reaper(vec![first]);
    let lock = model_dir.join(estimator::LOCK_FILE);
    let started = Instant::now();
    let owns = |owner: String| owner.starts_with(&format!("pid {pid} "));
    while !(std::fs::read_to_string(&lock).is_ok_and(owns)
        && model_dir.join("dnn_classifier.json").exists())
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first run never took the lock and wrote its configuration"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let config = std::fs::read(model_dir.join("dnn_classifier.json")).ok();
    let second = run(&mut train("256,128", "10"));
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    let message = stderr(&second);
    assert!(
        message.contains(&format!("in use by pid {pid} on ")),
        "{message}"
    );
    assert!(message.contains("(training, since unix time"), "{message}");
    assert_eq!(
        std::fs::read(model_dir.join("dnn_classifier.json")).ok(),
        config,
        "the refused run wrote nothing"
    );
    // SIGKILL: the lock goes with the process; the next run takes the directory over.
    let mut killed = reaper.0.pop().unwrap();
    killed.kill().unwrap();
    killed.wait().unwrap();
    let third = run(&mut train("64", "10"));
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        stderr(&third).contains(&format!("taking over the lock left by pid {pid} ")),
        "{}",
        stderr(&third)
    );
}

#[test]
fn resuming_with_flags_that_change_the_variables_is_refused_and_the_rate_replaced_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let train = |steps: &str, extra: &[&str]| {
        let mut cmd = bin();
        cmd.args(["train", "--train", &iris("iris_train.csv")])
            .args([
                "--label-column",
                "label",
                "--max-steps",
                steps,
                "--model-dir",
            ])
            .arg(&model)
            .args(extra);
        run(&mut cmd)
    };
    let first = train("10", &["--hidden-units", "16", "--optimizer", "sgd"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let config = std::fs::read(model.join("dnn_classifier.json")).unwrap();

    let wider = train("20", &["--hidden-units", "32,8"]);
    assert_user_error(wider, "--hidden-units 32,8, but the model in");
    let other = train("20", &["--optimizer", "adam"]);
    let text = stderr(&other);
    assert_user_error(other, "trained with sgd");
    assert!(text.contains("--optimizer adam"), "{text}");
    assert_eq!(
        std::fs::read(model.join("dnn_classifier.json")).unwrap(),
        config,
        "a refused run changes nothing"
    );

    // The same sizes and optimizer, a new rate: trained on with it, saying so.
    let faster = train("20", &["--hidden-units", "16", "--learning-rate", "0.2"]);
    assert!(faster.status.success(), "{}", stderr(&faster));
    assert!(
        stderr(&faster).contains("--learning-rate 0.2 replaces the saved model's 0.01"),
        "{}",
        stderr(&faster)
    );
    let plain = train("30", &[]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(!stderr(&plain).contains("replaces"), "{}", stderr(&plain));
}

#[test]
fn a_model_directory_removed_while_training_fails_the_run() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let mut cmd = bin();
    cmd.args(["train", "--train", &iris("iris_train.csv")])
        .args(["--label-column", "label", "--max-steps", "100000000"])
        .args(["--save-checkpoints-steps", "200", "--model-dir"])
        .arg(&model)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    while !std::fs::read_dir(&model)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension() == Some("ckpt".as_ref()))
        })
        .unwrap_or(false)
    {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("no checkpoint within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The run may be writing a file in it meanwhile: removing can race with that.
    while let Err(e) = std::fs::remove_dir_all(&model) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "cannot remove: {e}"
        );
    }
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("training went on after its model directory was removed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = stderr(&output);
    assert_user_error(
        output,
        "removed (or replaced) while this run was writing it",
    );
    assert!(text.contains(model.to_str().unwrap()), "{text}");
}
