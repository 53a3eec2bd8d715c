//! Input that would train or evaluate silently wrong is refused with one line naming the
//! file and line, the flag or the variable at fault — never a panic or an abort.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::cli::{assert_user_error, bin, iris, run};

/// Iris' training file with the cell at (`row`, `column`) (0-based data row) replaced.
fn iris_with(dir: &Path, name: &str, row: usize, column: usize, value: &str) -> PathBuf {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<&str> = lines[row + 1].split(',').collect();
    cells[column] = value;
    lines[row + 1] = cells.join(",");
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn train(model_dir: &Path, file: &Path, extra: &[&str]) -> std::process::Output {
    run(bin()
        .args(["train", "--label-column", "label", "--max-steps", "5"])
        .arg("--model-dir")
        .arg(model_dir)
        .arg("--train")
        .arg(file)
        .args(extra))
}

#[test]
fn bad_cells_and_labels_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A typo in a numeric column must not turn it into a categorical one.
    let typo = iris_with(d, "typo.csv", 6, 1, "abc");
    assert_user_error(
        train(&d.join("m1"), &typo, &[]),
        "typo.csv:8: column sepal_width_cm: 'abc' is not a finite number, but the column \
         holds numbers (line 2)",
    );
    // With a schema that says the column is categorical, the same file trains.
    let schema = d.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"columns": [{"name": "sepal_length_cm", "kind": "Float"},
            {"name": "sepal_width_cm", "kind": "Category"},
            {"name": "petal_length_cm", "kind": "Float"},
            {"name": "petal_width_cm", "kind": "Float"},
            {"name": "label", "kind": "Int"}], "label": "label"}"#,
    )
    .unwrap();
    let trained = train(
        &d.join("m2"),
        &typo,
        &["--schema", schema.to_str().unwrap()],
    );
    assert!(trained.status.success(), "{trained:?}");
    // NaN in training or evaluation data.
    let nan = iris_with(d, "nan.csv", 2, 0, "nan");
    assert_user_error(
        train(&d.join("m3"), &nan, &[]),
        "nan.csv:4: column sepal_length_cm: 'nan' is not a finite number",
    );
    let good = d.join("m4");
    assert!(train(&good, Path::new(&iris("iris_train.csv")), &[])
        .status
        .success());
    let evaluate = |file: &Path| {
        run(bin()
            .arg("evaluate")
            .arg("--model-dir")
            .arg(&good)
            .arg("--eval")
            .arg(file))
    };
    assert_user_error(
        evaluate(&nan),
        "nan.csv:4: column sepal_length_cm: cannot parse 'nan' as float (finite)",
    );
    let inf = iris_with(d, "inf.csv", 0, 3, "-inf");
    assert_user_error(evaluate(&inf), "inf.csv:2: column petal_width_cm");
    // A class id the model does not have, and a file with no rows.
    let label = iris_with(d, "label.csv", 4, 4, "7");
    assert_user_error(
        evaluate(&label),
        "label.csv:6: column label: label 7 is out of range for 3 classes",
    );
    let header_only = d.join("header.csv");
    std::fs::write(
        &header_only,
        "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label\n",
    )
    .unwrap();
    assert_user_error(
        evaluate(&header_only),
        "header.csv: no data rows to evaluate",
    );
    // The same bad label in training data.
    assert_user_error(
        train(&d.join("m5"), &label, &["--n-classes", "3"]),
        "label.csv:6: column label: label 7 is out of range for 3 classes",
    );
    // A label that is no class id, read as a number by the statistics pass.
    let fraction = iris_with(d, "fraction.csv", 40, 4, "1.5");
    assert_user_error(
        train(&d.join("m6"), &fraction, &[]),
        "fraction.csv:42: column label: label 1.5 is not a class id",
    );
}

#[test]
fn string_labels_outside_the_vocabulary_are_refused_naming_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Iris with its class ids written as names.
    let names = ["setosa", "versicolor", "virginica"];
    let named = |file: &str, rename: &dyn Fn(usize, &str) -> String| {
        let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for (i, line) in lines.iter_mut().enumerate().skip(1) {
            let (cells, id) = line.rsplit_once(',').unwrap();
            *line = format!("{cells},{}", rename(i, names[id.parse::<usize>().unwrap()]));
        }
        let path = d.join(file);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        (path, lines)
    };
    let (plain, lines) = named("names.csv", &|_, name| name.to_string());
    let first_virginica = 1 + lines
        .iter()
        .position(|l| l.ends_with(",virginica"))
        .unwrap();
    assert_user_error(
        train(
            &d.join("m1"),
            &plain,
            &["--label-vocabulary", "setosa,versicolor"],
        ),
        &format!(
            "names.csv:{first_virginica}: column label: label 'virginica' is not in \
             --label-vocabulary setosa,versicolor"
        ),
    );
    let model = d.join("m2");
    assert!(train(&model, &plain, &[]).status.success());
    // The head refuses a label it does not know batch by batch: the file is named.
    let (capital, _) = named("capital.csv", &|i, name| match i {
        7 => "Setosa".into(),
        _ => name.to_string(),
    });
    let evaluated = run(bin()
        .arg("evaluate")
        .arg("--model-dir")
        .arg(&model)
        .arg("--eval")
        .arg(&capital));
    assert_user_error(
        evaluated,
        "capital.csv: column label: label 'Setosa' is not in the label vocabulary",
    );
}

#[test]
fn flags_and_variables_that_cannot_work_are_refused_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    assert_user_error(
        train(
            &d.join("m1"),
            &iris_train,
            &["--save-checkpoints-steps", "0"],
        ),
        "--save-checkpoints-steps",
    );
    assert_user_error(
        train(
            &d.join("m2"),
            &iris_train,
            &["--batch-size", "1000000000000"],
        ),
        "--batch-size 1000000000000 with --hidden-units 128,64 needs at least",
    );
    assert_user_error(
        train(&d.join("m3"), &iris_train, &["--hidden-units", "100000000"]),
        "--batch-size 128 with --hidden-units 100000000 needs at least",
    );
    let mut not_text = bin();
    not_text
        .args(["train", "--label-column", "label", "--max-steps", "5"])
        .arg("--model-dir")
        .arg(d.join("m4"))
        .arg("--train")
        .arg(&iris_train)
        .env(
            "TF_CONFIG",
            std::ffi::OsStr::from_bytes(&[0xff, 0xfe, b'{']),
        );
    assert_user_error(
        run(&mut not_text),
        "TF_CONFIG is set but is not valid UTF-8",
    );
    let mut shared = bin();
    shared
        .args(["train", "--label-column", "label", "--max-steps", "5"])
        .arg("--model-dir")
        .arg(d.join("m5"))
        .arg("--train")
        .arg(&iris_train)
        .env(
            "TF_CONFIG",
            r#"{"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:5000"]},
                "task": {"type": "chief", "index": 0}}"#,
        );
    assert_user_error(
        run(&mut shared),
        "TF_CONFIG.cluster gives chief:0 and worker:0 the same address '127.0.0.1:5000'",
    );
    // A job of no steps would exit 0 with an untrained model; a peer timeout of 0 would
    // give every peer up at once.
    let mut no_steps = bin();
    no_steps
        .args(["train", "--label-column", "label", "--max-steps", "0"])
        .arg("--model-dir")
        .arg(d.join("m6"))
        .arg("--train")
        .arg(&iris_train);
    assert_user_error(run(&mut no_steps), "invalid value '0' for '--max-steps");
    assert_user_error(
        train(&d.join("m7"), &iris_train, &["--peer-timeout-secs", "0"]),
        "invalid value '0' for '--peer-timeout-secs",
    );
    for model in ["m1", "m2", "m3", "m4", "m5", "m6", "m7"] {
        assert!(
            !d.join(model).join("checkpoint").exists(),
            "{model} trained"
        );
    }
}

#[test]
fn numbers_beyond_what_the_machine_or_the_cluster_can_do_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    let cases: [(&[&str], &str); 15] = [
        (
            &["--intra-op-threads", "100000"],
            "--intra-op-threads 100000: more than the",
        ),
        (
            &["--allreduce-threads", "100000"],
            "--allreduce-threads 100000: more than the",
        ),
        (
            &["--prefetch-to-device", "1000000000000"],
            "--prefetch-to-device 1000000000000: at most 1024 batches",
        ),
        (
            // 256 MB a step, 82 GB ahead of it.
            &[
                "--prefetch-to-device",
                "1024",
                "--batch-size",
                "4000000",
                "--hidden-units",
                "1",
            ],
            "--prefetch-to-device 1024 with --batch-size 4000000 holds",
        ),
        (&["--learning-rate", "1e39"], "1e39 is not a learning rate"),
        (&["--learning-rate=-0.5"], "it must be at least 0"),
        (
            &["--replicas-to-aggregate", "0"],
            "invalid value '0' for '--replicas-to-aggregate",
        ),
        (
            &["--replicas-to-aggregate", "2"],
            "--replicas-to-aggregate 2 applies to --ps-mode sync only",
        ),
        (
            &["--ps-min-shard-bytes", "0"],
            "invalid value '0' for '--ps-min-shard-bytes",
        ),
        (
            &["--ps-max-shards", "2"],
            "the following required arguments were not provided",
        ),
        (
            // A bucket smaller than one f32 value.
            &["--allreduce-bucket-bytes", "3"],
            "invalid value '3' for '--allreduce-bucket-bytes",
        ),
        (
            &["--backward-passes-per-step", "0"],
            "invalid value '0' for '--backward-passes-per-step",
        ),
        (
            &["--timeline", "t.json", "--timeline-steps", "5"],
            "'5' is not SKIP,COUNT",
        ),
        (
            &["--powersgd-rank", "0"],
            "invalid value '0' for '--powersgd-rank",
        ),
        (
            &["--powersgd-start-step", "5"],
            "the following required arguments were not provided",
        ),
    ];
    for (i, (flags, needle)) in cases.iter().enumerate() {
        let model = d.join(format!("m{i}"));
        assert_user_error(train(&model, &iris_train, flags), needle);
        assert!(!model.join("checkpoint").exists(), "{flags:?} trained");
    }
    let mut more_than_the_cluster = bin();
    more_than_the_cluster
        .args(["train", "--label-column", "label", "--max-steps", "5"])
        .args(["--ps-mode", "sync", "--replicas-to-aggregate", "5"])
        .arg("--model-dir")
        .arg(d.join("cluster"))
        .arg("--train")
        .arg(&iris_train)
        .env(
            "TF_CONFIG",
            r#"{"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:5001"],
                "ps": ["127.0.0.1:5002"]}, "task": {"type": "chief", "index": 0}}"#,
        );
    assert_user_error(
        run(&mut more_than_the_cluster),
        "--replicas-to-aggregate 5: the cluster has 2 training task(s)",
    );
    let mut evaluate = bin();
    evaluate
        .args(["evaluate", "--intra-op-threads", "100000", "--eval"])
        .arg(&iris_train)
        .arg("--model-dir")
        .arg(d.join("m0"));
    assert_user_error(run(&mut evaluate), "--intra-op-threads 100000");
}

#[test]
fn a_closed_stdout_ends_the_run_quietly_and_a_full_one_is_named() {
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m");
    let trained = train(&model, &PathBuf::from(iris("iris_train.csv")), &[]);
    assert!(trained.status.success());
    let evaluate = |stdout: Stdio| {
        let mut cmd = bin();
        cmd.args(["evaluate", "--json", "--eval", &iris("iris_test.csv")])
            .arg("--model-dir")
            .arg(&model)
            .stdout(stdout)
            .stderr(Stdio::piped());
        cmd
    };
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = evaluate(Stdio::from(full)).output().unwrap();
    assert_user_error(output, "cannot write to stdout");
    // A reader that is gone before anything is written (`| head -0`).
    let mut child = evaluate(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(
        !text.contains("error") && !text.contains("panicked"),
        "{text}"
    );
}
