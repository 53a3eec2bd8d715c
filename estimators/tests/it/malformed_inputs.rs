//! A corpus of malformed input — TF_CONFIGs, CSV files, flags, checkpoints — run through the
//! `dnn-classifier` binary: every case exits with a code in 1..=127 and one error line that
//! names the field, the file and line, or the flag at fault; no panic, no hang.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{assert_user_error, bin, iris};

/// Longest a malformed case may run before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// Runs `cmd`, killing it (and failing) if it runs longer than [`HANG`].
fn bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dnn-classifier starts");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > HANG {
            child.kill().unwrap();
            panic!("{cmd:?} hung for {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// `train` on Iris for 5 steps into `model_dir`, with `extra` flags.
fn train(model_dir: &Path, file: &Path, extra: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.args(["train", "--label-column", "label", "--max-steps", "5"])
        .arg("--model-dir")
        .arg(model_dir)
        .arg("--train")
        .arg(file)
        .args(extra);
    cmd
}

fn tf_configs() -> Vec<(OsString, &'static str)> {
    let text = |t: &str| OsString::from(t);
    let w = r#""task": {"type": "worker", "index": 0}"#;
    let cases: Vec<(String, &str)> = vec![
        ("{".into(), "not valid JSON"),
        ("[]".into(), "must be a JSON object"),
        ("42".into(), "must be a JSON object"),
        (r#""cluster""#.into(), "must be a JSON object"),
        (r#"{"cluster": 5}"#.into(), ".cluster must be an object"),
        (format!(r#"{{"cluster": {{"worker": "a:1"}}, {w}}}"#), ".cluster.worker must be a list"),
        (format!(r#"{{"cluster": {{"worker": [1]}}, {w}}}"#), ".cluster.worker[0] is not"),
        (format!(r#"{{"cluster": {{"worker": ["a"]}}, {w}}}"#), ".cluster.worker[0] = 'a'"),
        (format!(r#"{{"cluster": {{"worker": ["a:"]}}, {w}}}"#), ".cluster.worker[0] = 'a:'"),
        (format!(r#"{{"cluster": {{"worker": [":1"]}}, {w}}}"#), ".cluster.worker[0] = ':1'"),
        (format!(r#"{{"cluster": {{"worker": ["a:99999"]}}, {w}}}"#), "'a:99999'"),
        (format!(r#"{{"cluster": {{"worker": ["a:-1"]}}, {w}}}"#), "'a:-1'"),
        (format!(r#"{{"cluster": {{"worker": ["a:0"]}}, {w}}}"#), "port 0"),
        (format!(r#"{{"cluster": {{"worker": ["a:1", null]}}, {w}}}"#), ".cluster.worker[1]"),
        (format!(r#"{{"cluster": {{"worker": [["a:1"]]}}, {w}}}"#), ".cluster.worker[0]"),
        (format!(r#"{{"cluster": {{"worker": {{"1": "a:1"}}}}, {w}}}"#), "lacks index 0"),
        (format!(r#"{{"cluster": {{"worker": {{"x": "a:1"}}}}, {w}}}"#), "key 'x'"),
        (format!(r#"{{"cluster": {{"gpu": ["a:1"]}}, {w}}}"#), ".cluster.gpu"),
        (r#"{"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}}"#.into(), ".cluster.chief has 2 entries"),
        (r#"{"cluster": {"chief": []}, "task": {"type": "chief"}}"#.into(), ".cluster.chief has 0 entries"),
        (r#"{"cluster": {"chief": "a:1"}, "task": {"type": "chief"}}"#.into(), ".cluster.chief must be a list"),
        (r#"{"cluster": {"chief": ["a:1"], "master": ["b:1"]}, "task": {"type": "chief"}}"#.into(), "both"),
        (r#"{"cluster": {"worker": ["a:1"], "evaluator": ["b:1", "c:1"]}, "task": {"type": "evaluator"}}"#.into(), ".cluster.evaluator has 2 entries"),
        (r#"{"cluster": {"worker": ["a:1"]}}"#.into(), ".task is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": 5}"#.into(), ".task is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"index": 0}}"#.into(), ".task.type is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": 7}}"#.into(), ".task.type is missing"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "boss"}}"#.into(), ".task.type = 'boss'"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}}"#.into(), ".task.index = -1"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "x"}}"#.into(), ".task.index = 'x'"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1.5}}"#.into(), ".task.index = 1.5"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}}"#.into(), ".task.index = true"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}"#.into(), ".task.index = 3 but cluster.worker has 1 entry"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 18446744073709551616}}"#.into(), ".task.index"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}}"#.into(), "cluster.chief has 0 entries"),
        (r#"{"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}}"#.into(), "cluster.ps has 0 entries"),
        (r#"{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps"}}"#.into(), "neither a chief nor a worker"),
        (r#"{"cluster": {"chief": ["h:1"], "worker": ["h:1"]}, "task": {"type": "chief"}}"#.into(), "gives chief:0 and worker:0 the same address 'h:1'"),
        (format!(r#"{{"cluster": {{"worker": ["h:1", "h:1"]}}, {w}}}"#), "gives worker:0 and worker:1 the same address"),
        (format!(r#"{{"cluster": {{"worker": ["h:1"], "ps": ["h:2", "h:2"]}}, {w}}}"#), "gives ps:0 and ps:1"),
        (format!(r#"{{"cluster": {{"worker": ["h:1"], "evaluator": ["h:1"]}}, {w}}}"#), "gives worker:0 and evaluator:0"),
    ];
    let mut all: Vec<(OsString, &str)> = cases.into_iter().map(|(t, n)| (text(&t), n)).collect();
    all.push((
        OsString::from_vec(vec![0xff, 0xfe, b'{']),
        "not valid UTF-8",
    ));
    all
}

#[test]
fn malformed_tf_configs_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = tf_configs();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    for (i, (tf_config, needle)) in cases.into_iter().enumerate() {
        let mut cmd = train(&dir.path().join(format!("m{i}")), &iris_train, &[]);
        cmd.env("TF_CONFIG", &tf_config);
        let output = bounded(&mut cmd);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.contains("TF_CONFIG"), "case {i}: {stderr}");
        assert_user_error(output, needle);
    }
}

/// Iris' training file with data row `row` (0-based) changed by `change`, as `name`.
fn iris_changed(dir: &Path, name: &str, row: usize, change: impl Fn(&mut Vec<String>)) -> PathBuf {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cells: Vec<String> = lines[row + 1].split(',').map(str::to_string).collect();
    change(&mut cells);
    lines[row + 1] = cells.join(",");
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn malformed_csv_files_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut cases: Vec<(PathBuf, String, Vec<&str>)> = Vec::new();
    let mut n = 0;
    let mut name = || {
        n += 1;
        format!("case{n}.csv")
    };
    let bad_values = ["abc", "nan", "inf", "-inf", "1e39", "1,5", "0x10", "1.2.3"];
    for (column, bad) in bad_values.iter().enumerate() {
        let places = [
            (column * 7, column % 4),
            (column * 11 + 3, (column + 1) % 4),
            (119 - column, (column + 2) % 4),
        ];
        for (row, col) in places {
            let file = name();
            let path = iris_changed(d, &file, row, |cells| cells[col] = bad.to_string());
            let needle = if *bad == "1,5" {
                format!("{file}:{}: expected 5 fields", row + 2)
            } else {
                format!("{file}:{}: column", row + 2)
            };
            cases.push((path, needle, vec![]));
        }
    }
    for row in [0, 5, 50, 119] {
        let file = name();
        let path = iris_changed(d, &file, row, |cells| {
            cells.pop();
        });
        cases.push((
            path,
            format!(
                "{file}:{}: expected 5 fields as in the header, found 4",
                row + 2
            ),
            vec![],
        ));
        let file = name();
        let path = iris_changed(d, &file, row, |cells| cells.push("9".into()));
        cases.push((
            path,
            format!(
                "{file}:{}: expected 5 fields as in the header, found 6",
                row + 2
            ),
            vec![],
        ));
    }
    for col in 0..4 {
        let file = name();
        let path = iris_changed(d, &file, 10 + col, |cells| cells[col] = String::new());
        let needle = format!("{file}:{}: column", 12 + col);
        cases.push((path, needle, vec![]));
    }
    for label in ["3", "7", "4294967295"] {
        let file = name();
        let path = iris_changed(d, &file, 20, |cells| cells[4] = label.into());
        let needle =
            format!("{file}:22: column label: label {label} is out of range for 3 classes");
        cases.push((path, needle, vec!["--n-classes", "3"]));
    }
    let header = "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label";
    let files: [(&str, &[u8], &str); 6] = [
        ("empty.csv", b"", "empty.csv"),
        (
            "header_only.csv",
            header.as_bytes(),
            "header_only.csv: no data rows",
        ),
        ("no_label.csv", b"a,b\n1,2\n", "no_label.csv"),
        (
            "binary.csv",
            &[0, 159, 146, 150, 255, 0, 10, 1, 2],
            "binary.csv",
        ),
        (
            "twice.csv",
            b"a,a,label\n1,2,0\n",
            "twice.csv: line 1: the header names column 'a' twice",
        ),
        (
            "text_label.csv",
            b"a,label\n1,0\n2,x\n",
            "text_label.csv:3: column label",
        ),
    ];
    for (file, bytes, needle) in files {
        let path = d.join(file);
        std::fs::write(&path, bytes).unwrap();
        cases.push((path, needle.to_string(), vec![]));
    }
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for (i, (path, needle, extra)) in cases.iter().enumerate() {
        let output = bounded(&mut train(&d.join(format!("m{i}")), path, extra));
        assert_user_error(output, needle);
    }
}

#[test]
fn bad_flags_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    let cases: [(&[&str], &str); 14] = [
        (&["--batch-size", "0"], "--batch-size"),
        (&["--batch-size=-3"], "--batch-size"),
        (&["--hidden-units", "0"], "hidden"),
        (&["--hidden-units", "a,b"], "--hidden-units"),
        (&["--dropout", "1.5"], "dropout"),
        (&["--learning-rate=-1"], "learning_rate"),
        (&["--learning-rate", "nan"], "learning_rate"),
        (&["--clip-norm", "0"], "norm"),
        (&["--l2-regularization=-1"], "l2"),
        (&["--device", "tpu"], "--device"),
        (&["--mirrored", "0"], "--mirrored"),
        (
            &["--save-checkpoints-steps", "0"],
            "--save-checkpoints-steps",
        ),
        (
            &["--learning-rate-schedule", "cosine_decay:decay_steps=0"],
            "decay_steps",
        ),
        (&["--optimizer", "lion"], "--optimizer"),
    ];
    for (i, (flags, needle)) in cases.into_iter().enumerate() {
        let output = bounded(&mut train(
            &dir.path().join(format!("m{i}")),
            &iris_train,
            flags,
        ));
        assert_user_error(output, needle);
    }
}

/// Damage done to a checkpoint file.
type Corruption = Box<dyn Fn(&Path)>;

#[test]
fn corrupted_checkpoints_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let trained = dir.path().join("trained");
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    assert!(bounded(&mut train(&trained, &iris_train, &[]))
        .status
        .success());
    let checkpoint = std::fs::read_dir(&trained)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .expect("a checkpoint");
    let name = checkpoint
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let good = std::fs::read(&checkpoint).unwrap();
    let corruptions: Vec<(&str, Corruption)> = vec![
        ("truncated", {
            let g = good.clone();
            Box::new(move |p: &Path| std::fs::write(p, &g[..g.len() / 2]).unwrap())
        }),
        ("a flipped byte", {
            let g = good.clone();
            Box::new(move |p: &Path| {
                let mut bytes = g.clone();
                let at = bytes.len() - 10;
                bytes[at] ^= 0x40;
                std::fs::write(p, bytes).unwrap()
            })
        }),
        (
            "empty",
            Box::new(|p: &Path| std::fs::write(p, b"").unwrap()),
        ),
        (
            "garbage",
            Box::new(|p: &Path| std::fs::write(p, b"not a checkpoint").unwrap()),
        ),
        (
            "removed",
            Box::new(|p: &Path| std::fs::remove_file(p).unwrap()),
        ),
    ];
    for (i, (what, corrupt)) in corruptions.iter().enumerate() {
        let copy = dir.path().join(format!("copy{i}"));
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&trained).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
            }
        }
        corrupt(&copy.join(&name));
        let mut evaluate = bin();
        evaluate
            .args(["evaluate", "--eval", &iris("iris_test.csv"), "--model-dir"])
            .arg(&copy);
        let output = bounded(&mut evaluate);
        assert!(!output.status.success(), "{what}: evaluated anyway");
        assert_user_error(output, &name);
    }
    // A corrupt index is not trusted: the checkpoint files themselves are found and read.
    let copy = dir.path().join("bad_index");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&trained).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(copy.join("checkpoint"), b"\xff\x00 not an index").unwrap();
    let mut evaluate = bin();
    evaluate
        .args([
            "evaluate",
            "--json",
            "--eval",
            &iris("iris_test.csv"),
            "--model-dir",
        ])
        .arg(&copy);
    let output = bounded(&mut evaluate);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#""global_step":5"#));
}
