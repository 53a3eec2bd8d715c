//! The `dnn-classifier` binary as a user runs it: real files, real processes.

use std::path::Path;
use std::process::{Command, Output};

pub(crate) fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dnn-classifier"));
    cmd.env_remove("TF_CONFIG");
    cmd
}

pub(crate) fn iris(file: &str) -> String {
    format!("{}/../datasets/data/{file}", env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("dnn-classifier runs")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub(crate) fn last_json(output: &Output) -> serde_json::Value {
    let text = stdout(output);
    let line = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no output; stderr: {}", stderr(output)));
    serde_json::from_str(line).unwrap()
}

/// `train` on Iris' training file (its label column `label`): how most runs here start.
pub(crate) fn train_on_iris() -> [String; 5] {
    let train = iris("iris_train.csv");
    ["train", "--train", &train, "--label-column", "label"].map(String::from)
}

/// `train-and-evaluate` on Iris as TF's tutorial trains it (128-64 hidden units, Adam at
/// 0.001) into `model_dir`, printing its metrics as JSON.
pub(crate) fn iris_train_and_evaluate_args(
    model_dir: &str,
    batch_size: &str,
    max_steps: u64,
) -> Vec<String> {
    let (train, eval) = (iris("iris_train.csv"), iris("iris_test.csv"));
    let steps = max_steps.to_string();
    [
        ["train-and-evaluate", "--train", &train, "--eval", &eval].as_slice(),
        &["--label-column", "label", "--hidden-units", "128,64"],
        &["--optimizer", "adam", "--learning-rate", "0.001"],
        &["--batch-size", batch_size, "--max-steps", &steps],
        &["--model-dir", model_dir, "--json"],
    ]
    .concat()
    .into_iter()
    .map(String::from)
    .collect()
}

pub(crate) fn train_iris(model_dir: &Path, steps: u64) -> Output {
    let model_dir = model_dir.to_str().unwrap();
    run(bin().args(iris_train_and_evaluate_args(model_dir, "128", steps)))
}

/// `dnn-classifier train` on Iris with Adam at 0.01, evaluated, and `flags`, into
/// `model_dir`, printing its metrics as JSON.
pub(crate) fn train_iris_adam(model_dir: &Path, flags: &[&str]) -> Output {
    run(bin()
        .args(["train", "--train", &iris("iris_train.csv"), "--eval"])
        .args([&iris("iris_test.csv"), "--label-column", "label"])
        .args(["--optimizer", "adam", "--learning-rate", "0.01", "--json"])
        .args(flags)
        .arg("--model-dir")
        .arg(model_dir))
}

#[test]
fn train_and_evaluate_iris_reaches_tf_accuracy_and_reports_json() {
    let dir = tempfile::tempdir().unwrap();
    let output = train_iris(dir.path(), 1000);
    assert!(output.status.success(), "{}", stderr(&output));
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 1000);
    assert!(metrics["accuracy"].as_f64().unwrap() >= 0.90, "{metrics}");
    assert!(metrics["examples_per_sec"].as_f64().unwrap() > 0.0);
    for key in ["loss", "average_loss"] {
        assert!(metrics[key].is_number(), "{key} missing: {metrics}");
    }
    assert!(dir.path().join("checkpoint").exists());
    assert!(dir.path().join("ckpt-1000.ckpt").exists());
    assert!(dir.path().join("eval").join("history.jsonl").exists());

    // Evaluate again in a new process: same numbers from the checkpoint.
    let again = run(bin()
        .args(["evaluate", "--eval", &iris("iris_test.csv"), "--model-dir"])
        .args([dir.path().to_str().unwrap(), "--json"]));
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(last_json(&again)["accuracy"], metrics["accuracy"]);
}

#[test]
fn train_json_reports_startup_apart_from_the_steady_rate() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(bin()
        .args(train_on_iris())
        .args([
            "--max-steps",
            "300",
            "--batch-size",
            "32",
            "--device",
            "auto",
        ])
        .args(["--model-dir", dir.path().to_str().unwrap(), "--json"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let metrics = last_json(&output);
    assert_eq!(metrics["global_step"], 300);
    let key = |name: &str| {
        metrics[name]
            .as_f64()
            .unwrap_or_else(|| panic!("{name} missing: {metrics}"))
    };
    assert!(key("startup_secs") > 0.0, "{metrics}");
    assert!(key("examples_per_sec") > 0.0, "{metrics}");
    assert!(key("total_examples_per_sec") > 0.0, "{metrics}");
}

#[test]
fn export_then_predict_from_the_export_equals_predict_from_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    assert!(train_iris(dir.path(), 50).status.success());
    let model_dir = dir.path().to_str().unwrap();
    let base = dir.path().join("export");
    let export = run(bin()
        .args(["export", "--model-dir", model_dir, "--export-dir-base"])
        .arg(&base));
    assert!(export.status.success(), "{}", stderr(&export));
    let export_dir = stdout(&export).trim().to_string();
    assert!(Path::new(&export_dir).join("model.safetensors").exists());

    let from_checkpoint = run(bin().args([
        "predict",
        "--input",
        &iris("iris_test.csv"),
        "--model-dir",
        model_dir,
    ]));
    let from_export = run(bin().args([
        "predict",
        "--input",
        &iris("iris_test.csv"),
        "--export-dir",
        &export_dir,
    ]));
    assert!(from_checkpoint.status.success() && from_export.status.success());
    assert_eq!(stdout(&from_checkpoint), stdout(&from_export));
    let lines: Vec<serde_json::Value> = stdout(&from_export)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 30);
    assert_eq!(lines[0]["probabilities"].as_array().unwrap().len(), 3);

    let csv = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--export-dir"])
        .args([&export_dir, "--format", "csv"]));
    let text = stdout(&csv);
    assert!(
        text.starts_with("class_id,class,probability_0,probability_1,probability_2\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 31);

    // TF's predict_keys: the keys asked for, in a full line's order and with its values.
    let selected = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--export-dir"])
        .args([&export_dir, "--predict-keys", "probabilities,class_ids"]));
    assert!(selected.status.success(), "{}", stderr(&selected));
    let first = stdout(&selected).lines().next().unwrap().to_string();
    let full = stdout(&from_export).lines().next().unwrap().to_string();
    let field = |key: &str| {
        let start = full.find(&format!(r#""{key}":"#)).unwrap();
        let end = start + full[start..].find(']').unwrap() + 1;
        full[start..end].to_string()
    };
    let expected = format!("{{{},{}}}", field("probabilities"), field("class_ids"));
    assert_eq!(first, expected);
    assert_eq!(stdout(&selected).lines().count(), 30);
    let misnamed = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--export-dir"])
        .args([&export_dir, "--predict-keys", "class_ids,class"]));
    assert_user_error(
        misnamed,
        "--predict-keys: 'class' is not a prediction key of this model (its keys: logits, \
         probabilities, class_ids, classes, all_class_ids, all_classes)",
    );
    let as_csv = run(bin()
        .args(["predict", "--input", &iris("iris_test.csv"), "--model-dir"])
        .args([model_dir, "--predict-keys", "logits", "--format", "csv"]));
    assert_user_error(as_csv, "--predict-keys selects the keys of JSON lines");

    // --output holds what stdout would; a run failing after some batches leaves it as it was.
    let output = dir.path().join("predictions.jsonl");
    let predict_into = |input: &Path| {
        run(bin()
            .args(["predict", "--export-dir", &export_dir, "--input"])
            .arg(input)
            .arg("--output")
            .arg(&output))
    };
    let written = predict_into(Path::new(&iris("iris_test.csv")));
    assert!(written.status.success(), "{}", stderr(&written));
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        stdout(&from_export)
    );
    let test_csv = std::fs::read_to_string(iris("iris_test.csv")).unwrap();
    let (header, rows) = test_csv.split_once('\n').unwrap();
    let bad = dir.path().join("bad_after_600_rows.csv");
    let long = format!("{header}\n{}1,2,x,4,0\n", rows.repeat(20));
    std::fs::write(&bad, long).unwrap();
    assert_user_error(predict_into(&bad), "bad_after_600_rows.csv:602:");
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        stdout(&from_export)
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn evaluate_predict_and_export_read_the_checkpoint_given_and_predict_the_device_given() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("model");
    let trained = train_iris_adam(
        &model_dir,
        &["--max-steps", "300", "--save-checkpoints-steps", "100"],
    );
    assert!(trained.status.success(), "{}", stderr(&trained));
    let early = model_dir.join("ckpt-100.ckpt");
    let test_csv = iris("iris_test.csv");
    let evaluate = |extra: &[&std::ffi::OsStr]| {
        last_json(&run(bin()
            .args(["evaluate", "--eval", &test_csv, "--json", "--model-dir"])
            .arg(&model_dir)
            .args(extra)))
    };
    assert_eq!(evaluate(&[])["global_step"], 300);
    let named = evaluate(&[
        "--checkpoint".as_ref(),
        early.as_os_str(),
        "--name".as_ref(),
        "early".as_ref(),
    ]);
    assert_eq!(named["global_step"], 100, "{named}");
    assert!(model_dir.join("eval_early").join("history.jsonl").exists());

    let predict = |extra: &[&std::ffi::OsStr]| {
        let output = run(bin()
            .args(["predict", "--input", &test_csv, "--model-dir"])
            .arg(&model_dir)
            .args(extra));
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let latest = predict(&[]);
    let at_100 = predict(&["--checkpoint".as_ref(), early.as_os_str()]);
    assert_ne!(latest, at_100, "another checkpoint predicts otherwise");
    assert_eq!(
        at_100,
        predict(&["--checkpoint".as_ref(), early.as_os_str()])
    );
    let on_one_thread = ["--device", "cpu", "--intra-op-threads", "1"].map(std::ffi::OsStr::new);
    assert_eq!(latest, predict(&on_one_thread));
    let on_no_device = run(bin()
        .args([
            "predict",
            "--input",
            &test_csv,
            "--device",
            "tpu",
            "--model-dir",
        ])
        .arg(&model_dir));
    assert_user_error(
        on_no_device,
        "--device tpu: expected cpu, cuda, cuda:N or auto",
    );

    let export = run(bin()
        .args(["export", "--model-dir"])
        .arg(&model_dir)
        .arg("--export-dir-base")
        .arg(dir.path().join("export"))
        .arg("--checkpoint")
        .arg(model_dir.join("ckpt-200.ckpt")));
    assert!(export.status.success(), "{}", stderr(&export));
    let info =
        std::fs::read_to_string(Path::new(stdout(&export).trim()).join("export.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["global_step"], 200, "{info}");

    let missing = model_dir.join("ckpt-7.ckpt");
    let refused = run(bin()
        .args(["evaluate", "--eval", &test_csv, "--model-dir"])
        .arg(&model_dir)
        .arg("--checkpoint")
        .arg(&missing));
    assert_user_error(refused, "ckpt-7.ckpt: No such file");
}

/// Runs a failing command: exit code 1..=127, one line on stderr naming `needle`.
pub(crate) fn assert_user_error(output: Output, needle: &str) {
    let code = output.status.code().expect("exited, not killed");
    assert!((1..=127).contains(&code), "exit code {code}");
    let text = stderr(&output);
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(errors[0].contains(needle), "expected '{needle}' in: {text}");
    assert!(!text.contains("panicked"), "{text}");
}

/// Checks that `output` is a success whose stderr says each of `said`.
pub(crate) fn assert_success_saying(output: &Output, said: &[&str]) {
    let text = stderr(output);
    assert!(output.status.success(), "{text}");
    for line in said {
        assert!(text.contains(line), "no {line:?} in: {text}");
    }
}

#[test]
fn user_errors_are_one_line_messages_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("m");
    let m = model_dir.to_str().unwrap();
    let train = |extra: &[&str]| {
        let mut cmd = bin();
        cmd.args([
            "train",
            "--label-column",
            "label",
            "--max-steps",
            "5",
            "--model-dir",
            m,
        ]);
        cmd.args(extra);
        run(&mut cmd)
    };
    assert_user_error(train(&["--train", "no/such.csv"]), "no/such.csv");
    let mut wrong_label = bin();
    wrong_label.args([
        "train",
        "--train",
        &iris("iris_train.csv"),
        "--label-column",
        "species",
    ]);
    wrong_label.args(["--max-steps", "5", "--model-dir", m]);
    assert_user_error(run(&mut wrong_label), "species");
    assert_user_error(
        train(&["--train", &iris("iris_train.csv"), "--device", "cuda"]),
        "cuda",
    );
    assert_user_error(
        train(&["--train", &iris("iris_train.csv"), "--device", "cuda:x"]),
        "--device cuda:x: 'x' is not a CUDA device index",
    );
    assert_user_error(
        train(&["--train", &iris("iris_train.csv"), "--device", "tpu"]),
        "--device tpu: expected cpu, cuda, cuda:N or auto",
    );
    assert_user_error(
        train(&["--train", &iris("iris_train.csv"), "--exporters", "best"]),
        "--exporters: train exports nothing; exporters run in train-and-evaluate",
    );
    for (flag, value, error) in [
        ("--hidden-units", "8,0", "a layer needs at least 1 unit"),
        (
            "--n-classes",
            "1",
            "1: a classifier needs at least 2 classes",
        ),
        (
            "--label-vocabulary",
            "",
            "a classifier needs at least 2 class names",
        ),
        (
            "--label-vocabulary",
            "a,a,b",
            "--label-vocabulary: invalid configuration: label vocabulary has 'a' twice",
        ),
    ] {
        let output = run(bin()
            .args(train_on_iris())
            .args(["--max-steps", "5", flag, value, "--model-dir"])
            .arg(dir.path().join("fresh")));
        let text = stderr(&output);
        assert_user_error(output, error);
        assert!(text.contains(flag), "{text}");
    }
    if !cfg!(feature = "cuda") {
        assert_user_error(
            train(&["--train", &iris("iris_train.csv"), "--device", "cuda:1"]),
            "device cuda:1: this binary was built without the `cuda` feature",
        );
    }

    // A label the model never saw.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label\n1,2,3,4,7\n",
    )
    .unwrap();
    assert!(train(&["--train", &iris("iris_train.csv")])
        .status
        .success());
    let evaluate = run(bin()
        .args(["evaluate", "--model-dir", m, "--eval"])
        .arg(&bad));
    assert_user_error(evaluate, "label 7");
    // A bad cell names the file, line and column.
    std::fs::write(
        &bad,
        "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label\n1,abc,3,4,0\n",
    )
    .unwrap();
    let evaluate = run(bin()
        .args(["evaluate", "--model-dir", m, "--eval"])
        .arg(&bad));
    assert_user_error(
        evaluate,
        "bad.csv:2: column sepal_width_cm: cannot parse 'abc'",
    );
    assert_user_error(
        run(bin().args([
            "evaluate",
            "--eval",
            &iris("iris_test.csv"),
            "--model-dir",
            "/nonexistent",
        ])),
        "/nonexistent",
    );
}

#[test]
fn train_on_an_evaluator_task_trains_nothing_and_exits_0() {
    // The same command runs as every task of a cluster: an evaluator has nothing to train
    // (train-and-evaluate is where it evaluates), so it ends at once, writing nothing.
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("m");
    let output = run(bin()
        .env(
            "TF_CONFIG",
            r#"{"cluster": {"chief": ["127.0.0.1:1"]},
                "task": {"type": "evaluator", "index": 0}}"#,
        )
        .args(train_on_iris())
        .args([
            "--max-steps",
            "5",
            "--model-dir",
            model_dir.to_str().unwrap(),
        ]));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let checkpoints = std::fs::read_dir(&model_dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".ckpt"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(checkpoints, 0, "an evaluator task writes no checkpoint");
}

#[test]
fn every_flag_of_every_subcommand_has_an_example_in_its_help() {
    for sub in [
        "train",
        "train-and-evaluate",
        "evaluate",
        "predict",
        "export",
    ] {
        let output = run(bin().args([sub, "--help"]));
        assert!(output.status.success());
        let help = stdout(&output);
        assert!(help.contains("Example"), "{sub} --help lacks an example");
        // Each option's block runs from its `--flag` line to the next option's; the
        // options end where the unindented example after them starts.
        let options = help.split("Options:").nth(1).unwrap();
        let options = options.split("\nExample").next().unwrap();
        let mut blocks: Vec<(String, String)> = Vec::new();
        for line in options.lines() {
            let trimmed = line.trim_start();
            match trimmed.strip_prefix("--") {
                Some(rest) if line.starts_with("  ") => {
                    // Short help puts the text on the flag's line.
                    let flag = rest.split([' ', '=']).next().unwrap().to_string();
                    blocks.push((flag, format!("{rest} ")));
                }
                _ => {
                    if let Some((_, text)) = blocks.last_mut() {
                        text.push_str(trimmed);
                        text.push(' ');
                    }
                }
            }
        }
        assert!(blocks.len() >= 2, "{sub}: no options found in {help}");
        for (flag, text) in &blocks {
            assert!(
                text.contains(&format!("Example: `--{flag}")),
                "{sub} --{flag} has no example: {text}"
            );
        }
    }
}
