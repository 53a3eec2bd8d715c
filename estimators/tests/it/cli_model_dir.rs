//! `dnn-classifier train` and its model directory: a second run on a directory in use is
//! refused and a dead one's lock taken over, a resumed run may not change the variables or
//! what the labels mean but sets its own checkpoint cadence, and a directory removed while
//! training fails the run.

use crate::cli::{assert_success_saying, assert_user_error, bin, run, stderr, train_on_iris};

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
        cmd.args(train_on_iris())
            .args(["--hidden-units", hidden, "--max-steps", steps])
            .args(["--model-dir", &model]);
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
    let taken_over = format!("taking over the lock left by pid {pid} ");
    assert_success_saying(&third, &[&taken_over]);
}

#[test]
fn resuming_with_flags_that_change_the_variables_is_refused_and_the_rate_replaced_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let train = |steps: &str, extra: &[&str]| {
        run(bin()
            .args(train_on_iris())
            .args(["--max-steps", steps, "--model-dir"])
            .arg(&model)
            .args(extra))
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
    // What the labels mean may not change either.
    for (flag, value, kept) in [
        ("--activation-fn", "tanh", "trained with relu"),
        (
            "--weight-column",
            "petal_width_cm",
            "trained with no weight column",
        ),
        ("--n-classes", "4", "trained with 3"),
        (
            "--label-vocabulary",
            "a,b,c",
            "trained with no label vocabulary",
        ),
        ("--label-column", "petal_width_cm", "trained with label:"),
        ("--no-normalize", "", "its numeric columns standardised"),
    ] {
        let mut args = train_on_iris().to_vec();
        if flag == "--label-column" {
            args.truncate(3);
        }
        let changed = run(bin()
            .args(args)
            .args(["--max-steps", "20", "--model-dir"])
            .arg(&model)
            .arg(flag)
            .args((!value.is_empty()).then_some(value)));
        let text = stderr(&changed);
        let given = if value.is_empty() { "on" } else { value };
        assert_user_error(changed, &format!("{flag} {given}, but the model in"));
        assert!(text.contains(kept), "{text}");
    }
    // Nor the schema the files are read through.
    let schema = dir.path().join("schema.json");
    let with_sepal_width = |kind: &str, steps: &str| {
        let columns = [
            "sepal_length_cm",
            "sepal_width_cm",
            "petal_length_cm",
            "petal_width_cm",
        ]
        .map(|name| match name {
            "sepal_width_cm" => format!(r#"{{"name": "{name}", "kind": "{kind}"}}"#),
            _ => format!(r#"{{"name": "{name}", "kind": "Float"}}"#),
        });
        let text = format!(
            r#"{{"columns": [{}, {{"name": "label", "kind": "Int"}}]}}"#,
            columns.join(", ")
        );
        std::fs::write(&schema, text).unwrap();
        train(steps, &["--schema", schema.to_str().unwrap()])
    };
    let changed = with_sepal_width("Category", "20");
    let text = stderr(&changed);
    assert_user_error(
        changed,
        &format!(
            "--schema {} (column 2: sepal_width_cm as Category), but the model in",
            schema.display()
        ),
    );
    assert!(
        text.contains("trained with column 2: sepal_width_cm as Float"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(model.join("dnn_classifier.json")).unwrap(),
        config,
        "a refused run changes nothing"
    );

    // The same sizes and optimizer, a new rate: trained on with it, saying so.
    let faster = train("20", &["--hidden-units", "16", "--learning-rate", "0.2"]);
    assert_success_saying(
        &faster,
        &["--learning-rate 0.2 replaces the saved model's 0.01"],
    );
    let plain = train("30", &["--n-classes", "3"]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(!stderr(&plain).contains("replaces"), "{}", stderr(&plain));
    // The schema it was trained with, given again: trained on.
    let same = with_sepal_width("Float", "40");
    assert!(same.status.success(), "{}", stderr(&same));
}

#[test]
fn the_checkpoint_cadence_is_each_runs_own_and_the_activation_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let train = |steps: &str, extra: &[&str]| {
        let output = run(bin()
            .args(train_on_iris())
            .args(["--max-steps", steps, "--model-dir"])
            .arg(&model)
            .args(extra));
        assert!(output.status.success(), "{}", stderr(&output));
        output
    };
    let checkpoints = || {
        let mut steps: Vec<u64> = std::fs::read_dir(&model)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_prefix("ckpt-")?
                    .strip_suffix(".ckpt")?
                    .parse()
                    .ok()
            })
            .collect();
        steps.sort_unstable();
        steps
    };
    train(
        "100",
        &["--save-checkpoints-steps", "50", "--activation-fn", "tanh"],
    );
    assert_eq!(checkpoints(), [50, 100]);
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("dnn_classifier.json")).unwrap()).unwrap();
    assert_eq!(config["network"]["activation"], "tanh", "{config}");
    // Resumed with another cadence: that cadence, and the saved activation kept.
    let logged = train(
        "140",
        &[
            "--save-checkpoints-steps",
            "10",
            "--keep-checkpoint-max",
            "3",
        ],
    );
    assert_eq!(checkpoints(), [120, 130, 140]);
    let logs = stderr(&logged);
    assert_eq!(logs.matches("INFO loss = ").count(), 0, "{logs}");
    // Keeping one every few microseconds keeps each one this run saves that falls out of
    // the newest one; those saved before it started go as usual.
    train(
        "170",
        &[
            "--save-checkpoints-steps",
            "10",
            "--keep-checkpoint-max",
            "1",
            "--keep-checkpoint-every-n-hours",
            "0.000000001",
        ],
    );
    assert_eq!(checkpoints(), [150, 160, 170]);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("checkpoint")).unwrap()).unwrap();
    assert_eq!(
        index["all"],
        serde_json::json!(["ckpt-170.ckpt"]),
        "{index}"
    );
    assert!(
        index["last_preserved_timestamp"].as_f64().unwrap() > 0.0,
        "{index}"
    );
    let logged = train(
        "230",
        &["--keep-checkpoint-max", "0", "--log-step-count-steps", "20"],
    );
    // Without a cadence flag: TF's default (600 s), so only the final checkpoint is added.
    assert_eq!(checkpoints(), [150, 160, 170, 230]);
    let logs = stderr(&logged);
    assert_eq!(logs.matches("INFO loss = ").count(), 3, "{logs}");
}

#[test]
fn a_model_directory_removed_while_training_fails_the_run() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let mut cmd = bin();
    cmd.args(train_on_iris())
        .args(["--max-steps", "100000000"])
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
