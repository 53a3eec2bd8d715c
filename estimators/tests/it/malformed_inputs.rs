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
        (format!(r#"{{"cluster": {{"worker": ["127.0.0.1:5000", "127.0.0.1:05000"]}}, {w}}}"#), "gives worker:0 '127.0.0.1:5000' and worker:1 '127.0.0.1:05000': the same address"),
        (r#"{"cluster": {"chief": ["localhost:5000"], "worker": ["127.0.0.1:5000"]}, "task": {"type": "chief"}}"#.into(), "gives chief:0 'localhost:5000' and worker:0 '127.0.0.1:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["[::1]:5000"], "ps": ["LOCALHOST:5000"]}}, {w}}}"#), "gives worker:0 '[::1]:5000' and ps:0 'LOCALHOST:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["Node-1:5000", "node-1:5000"]}}, {w}}}"#), "gives worker:0 'Node-1:5000' and worker:1 'node-1:5000'"),
        (format!(r#"{{"cluster": {{"worker": ["a:00"]}}, {w}}}"#), "port 0"),
        (format!(r#"{{"cluster": {{"worker": ["a:+1"]}}, {w}}}"#), "'a:+1'"),
        (r#"{"cluster": {}, "task": {"type": "ps", "index": 0}}"#.into(), ".task.type = 'ps' but .cluster names no task"),
        (r#"{"task": {"type": "chief", "index": 0}}"#.into(), ".task.type = 'chief' but .cluster names no task"),
        (r#"{"cluster": {}, "task": {"type": "worker", "index": 1}}"#.into(), ".task.index = 1 but .cluster names no task"),
        (r#"{"cluster": {}, "task": {"type": "worker", "index": 99999999999999999999}}"#.into(), ".task.index = 1e+20 is not a non-negative integer"),
        (r#"{"cluster": {}, "task": 5}"#.into(), ".task = 5 is not an object"),
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
        (&["--learning-rate=-1"], "--learning-rate"),
        (&["--learning-rate", "nan"], "--learning-rate"),
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

/// Iris' training file with a column `colour` after the label, holding `colour(i)` in data
/// row `i` (0-based), as `name`.
fn iris_coloured(dir: &Path, name: &str, colour: impl Fn(usize) -> Vec<u8>) -> PathBuf {
    let text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let mut bytes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b',');
        match i {
            0 => bytes.extend_from_slice(b"colour"),
            _ => bytes.extend(colour(i - 1)),
        }
        bytes.push(b'\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn text_that_is_not_utf8_is_refused_naming_the_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Decoded with replacement characters, `r\xe9d` and `r\xe8d` would both be `r\u{fffd}d`:
    // one category where the file has two.
    let latin1 = |i: usize| match i % 3 {
        0 => b"blue".to_vec(),
        1 => b"r\xe9d".to_vec(),
        _ => b"r\xe8d".to_vec(),
    };
    let mut cases: Vec<(PathBuf, String, Vec<String>)> = vec![(
        iris_coloured(d, "latin1.csv", latin1),
        "latin1.csv:3: field 'colour' (column 6) is not valid UTF-8: byte 0xE9 at offset 1 of \
         'r\u{fffd}d'; the file looks like Latin-1/Windows-1252"
            .into(),
        vec![],
    )];
    // Past the rows schema inference reads: a schema given, the rows are read for training.
    let late = |i: usize| match i {
        117 => b"gr\xfcn".to_vec(),
        _ => b"blue".to_vec(),
    };
    let schema = d.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"columns": [{"name": "sepal_length_cm", "kind": "Float"},
            {"name": "sepal_width_cm", "kind": "Float"},
            {"name": "petal_length_cm", "kind": "Float"},
            {"name": "petal_width_cm", "kind": "Float"},
            {"name": "label", "kind": "Int"},
            {"name": "colour", "kind": "Category"}], "label": "label"}"#,
    )
    .unwrap();
    cases.push((
        iris_coloured(d, "late.csv", late),
        "late.csv:119: field 'colour' (column 6) is not valid UTF-8: byte 0xFC at offset 2".into(),
        vec!["--schema".into(), schema.display().to_string()],
    ));
    let header = "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,label";
    let iris_text = std::fs::read_to_string(iris("iris_train.csv")).unwrap();
    let le: Vec<u8> = iris_text
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let be: Vec<u8> = iris_text
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect();
    let files: [(&str, Vec<u8>, &str); 5] = [
        (
            "latin1_header.csv",
            [header.as_bytes(), b",co\xf6lour\n1,2,3,4,0,red\n"].concat(),
            "latin1_header.csv:1: header field 6 is not valid UTF-8: byte 0xF6 at offset 2",
        ),
        (
            "utf16le.csv",
            [&[0xff, 0xfe][..], &le].concat(),
            "utf16le.csv: UTF-16 LE text (byte-order mark FF FE), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "utf16be.csv",
            [&[0xfe, 0xff][..], &be].concat(),
            "utf16be.csv: UTF-16 BE text (byte-order mark FE FF), not UTF-8: re-encode it as UTF-8",
        ),
        (
            "utf16_no_mark.csv",
            le,
            "utf16_no_mark.csv: UTF-16 LE text without a byte-order mark",
        ),
        (
            "zeros.csv",
            vec![0; 4096],
            "zeros.csv: binary data, not text (NUL byte at offset 0)",
        ),
    ];
    for (name, bytes, needle) in files {
        let path = d.join(name);
        std::fs::write(&path, bytes).unwrap();
        cases.push((path, needle.into(), vec![]));
    }
    // A file with no line end is refused at 64 MiB, not read into memory whole.
    let endless = d.join("endless.csv");
    let mut bytes = format!("{header}\n1,2,3,4,0\n").into_bytes();
    bytes.resize(bytes.len() + (64 << 20) + 1, b'7');
    std::fs::write(&endless, bytes).unwrap();
    cases.push((
        endless,
        "endless.csv:3: record runs past 64 MiB without ending".into(),
        vec![],
    ));
    for (i, (path, needle, extra)) in cases.iter().enumerate() {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let output = bounded(&mut train(&d.join(format!("m{i}")), path, &extra));
        assert_user_error(output, needle);
    }
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("eval.csv");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let iris_train = PathBuf::from(iris("iris_train.csv"));
    let fifo_needle = format!(
        "{} is a FIFO (named pipe), not a regular file",
        fifo.display()
    );
    // Read without bound, blocked for ever, or not data at all.
    let mut cases: Vec<(Command, String)> = vec![
        (
            train(&d.join("m0"), Path::new("/dev/zero"), &[]),
            "/dev/zero is a character device, not a regular file".into(),
        ),
        (
            train(&d.join("m1"), d, &[]),
            format!("{} is a directory, not a regular file", d.display()),
        ),
        (train(&d.join("m2"), &fifo, &[]), fifo_needle.clone()),
    ];
    // As the evaluation file, after (or before) training.
    let eval = ["--eval", fifo.to_str().unwrap()];
    cases.push((
        train(&d.join("m3"), &iris_train, &eval),
        fifo_needle.clone(),
    ));
    let mut train_and_evaluate = train(&d.join("m4"), &iris_train, &eval);
    let args: Vec<OsString> = train_and_evaluate.get_args().map(OsString::from).collect();
    train_and_evaluate = bin();
    train_and_evaluate
        .arg("train-and-evaluate")
        .args(&args[1..]);
    cases.push((train_and_evaluate, fifo_needle.clone()));
    let trained = d.join("m5");
    assert!(bounded(&mut train(&trained, &iris_train, &[]))
        .status
        .success());
    let mut evaluate = bin();
    evaluate
        .arg("evaluate")
        .args(eval)
        .arg("--model-dir")
        .arg(&trained);
    cases.push((evaluate, fifo_needle));
    for (mut cmd, needle) in cases {
        let started = Instant::now();
        let output = bounded(&mut cmd);
        assert!(
            started.elapsed() < HANG / 2,
            "{cmd:?} took {:?}",
            started.elapsed()
        );
        assert_user_error(output, &needle);
    }
}
