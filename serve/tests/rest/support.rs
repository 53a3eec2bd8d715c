//! What the REST tests share: Iris exports, a server on a loopback port, a real HTTP
//! client, and the answers `Predictor` gives directly.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::export::ServableEstimator;
use estimator::{EstimatorExt, OptimizerSpec, Predictor, RunConfig, TrainSpec};
use estimator_serve::{Background, Limits, Loaders, ModelConfig, Server};
use estimators::feature_column::standardized_numeric_columns;
use estimators::{DnnClassifier, DnnRegressor};
use serde_json::{json, Value};

pub(crate) const FEATURES: [&str; 4] = [
    "sepal_length_cm",
    "sepal_width_cm",
    "petal_length_cm",
    "petal_width_cm",
];

/// An Iris classifier trained `steps` steps in `model_dir`, exported under `base`.
pub(crate) fn export_iris(model_dir: &Path, base: &Path, steps: u64) -> PathBuf {
    let schema = bundled::iris_schema();
    let train = bundled::iris_train_path();
    let stats = FeatureStats::compute(CsvDataset::open(&train, schema.clone()).unwrap()).unwrap();
    let columns = standardized_numeric_columns(&schema, &stats).unwrap();
    let config = RunConfig::new(model_dir).with_progress(false);
    let classifier = DnnClassifier::new(config, &schema, columns, [16, 8], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.01));
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(32, false))
    };
    classifier
        .train(input, TrainSpec::max_steps(steps))
        .unwrap();
    classifier.export(base).unwrap()
}

/// An Iris regressor (of the rows' `label`, as a number) trained 30 steps in `model_dir`,
/// exported under `base`.
pub(crate) fn export_regressor(model_dir: &Path, base: &Path) -> PathBuf {
    let schema = bundled::iris_schema();
    let train = bundled::iris_train_path();
    let stats = FeatureStats::compute(CsvDataset::open(&train, schema.clone()).unwrap()).unwrap();
    let columns = standardized_numeric_columns(&schema, &stats).unwrap();
    let config = RunConfig::new(model_dir).with_progress(false);
    let regressor = DnnRegressor::new(config, &schema, columns, [8]).unwrap();
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(32, false))
    };
    regressor.train(input, TrainSpec::max_steps(30)).unwrap();
    regressor.export(base).unwrap()
}

pub(crate) fn version_of(dir: &Path) -> u64 {
    dir.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// A server on a free loopback port, stopped when dropped.
pub(crate) struct Running {
    pub(crate) url: String,
    pub(crate) server: Server,
    _background: Background,
}

impl Running {
    pub(crate) fn start(server: Server) -> Self {
        let background = server.clone().spawn("127.0.0.1:0", Duration::ZERO).unwrap();
        Self {
            url: format!("http://{}", background.address()),
            server,
            _background: background,
        }
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        answer(ureq::get(&format!("{}{path}", self.url)).call())
    }

    pub(crate) fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, &body.to_string())
    }

    pub(crate) fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        answer(
            ureq::post(&format!("{}{path}", self.url))
                .set("Content-Type", "application/json")
                .send_string(body),
        )
    }
}

/// The status and JSON body of a reply, whatever the status.
pub(crate) fn answer(reply: Result<ureq::Response, ureq::Error>) -> (u16, Value) {
    let response = match reply {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("no answer: {e}"),
    };
    let status = response.status();
    let text = response.into_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub(crate) fn rows() -> Vec<Value> {
    vec![
        json!({"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}),
        json!({"sepal_length_cm": 6.7, "sepal_width_cm": 3.0, "petal_length_cm": 5.2, "petal_width_cm": 2.3}),
    ]
}

/// What `Predictor` gives for `rows()` directly, as `dnn-classifier predict` writes them
/// (one JSON object per line).
pub(crate) fn expected(export: &Path) -> Vec<String> {
    let (predictions, _) = predicted::<DnnClassifier>(export, &rows());
    (predictions.iter())
        .map(|p| serde_json::to_string(p).unwrap())
        .collect()
}

/// What `Predictor` gives for `rows` directly, by an `E` exported to `export`, and the
/// export's output keys.
pub(crate) fn predicted<E>(export: &Path, rows: &[Value]) -> (Vec<E::Prediction>, Vec<String>)
where
    E: ServableEstimator<Batch = estimator::datasets::ColumnarBatch>,
{
    let predictor = Predictor::<E>::load(export).unwrap();
    let examples: Vec<_> = rows
        .iter()
        .map(|r| estimator::datasets::Example {
            dense: FEATURES
                .iter()
                .map(|f| r[f].as_f64().unwrap() as f32)
                .collect(),
            ..Default::default()
        })
        .collect();
    let batch = estimator::datasets::ColumnarBatch::from_examples(&examples).unwrap();
    let outputs = predictor.signature().outputs.clone();
    (predictor.predict(&batch).unwrap(), outputs)
}

pub(crate) fn error_of(body: &Value) -> &str {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error member: {body}"))
}

/// The model `iris`, its versions under `base`.
pub(crate) fn iris_model(base: &Path) -> Vec<ModelConfig> {
    vec![ModelConfig::new("iris", base)]
}

/// A server of [`iris_model`] with the canned estimators' loaders.
pub(crate) fn load_iris(base: &Path) -> Server {
    Server::load(iris_model(base), Loaders::canned()).unwrap()
}

/// A server started with `limits`, on a free loopback port.
pub(crate) fn start_iris_with(dir: &Path, limits: Limits) -> Running {
    let base = dir.join("export");
    export_iris(&dir.join("model"), &base, 20);
    Running::start(load_iris(&base).with_limits(limits))
}

/// A `POST` of `body` to `path`, written by hand (keep-alive).
pub(crate) fn request_bytes(path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The status and body of the answer read from `stream`, whole, by its content-length.
pub(crate) fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// One request on `stream`, written by hand, and its answer.
pub(crate) fn raw_post(stream: &mut TcpStream, path: &str, body: &str) -> (u16, String) {
    stream.write_all(&request_bytes(path, body)).unwrap();
    read_answer(stream)
}

/// How many of `streams` the server closes within `within` (stopping once `enough` are).
pub(crate) fn count_closed(streams: &mut [TcpStream], enough: usize, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut closed = vec![false; streams.len()];
    loop {
        for (stream, closed) in streams.iter_mut().zip(closed.iter_mut()) {
            if !*closed {
                *closed = closed_after(stream, Duration::from_millis(5)).is_some();
            }
        }
        let n = closed.iter().filter(|c| **c).count();
        if n >= enough || Instant::now() > deadline {
            return n;
        }
    }
}

/// How long until the server closes `stream`, waiting at most `within`; `None` if it is
/// still open then. Anything the server sends first is read and dropped.
pub(crate) fn closed_after(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut sink = [0u8; 1024];
    loop {
        let left = within.checked_sub(start.elapsed())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match stream.read(&mut sink) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(start.elapsed()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None
            }
            Err(e) => panic!("reading the connection: {e}"),
        }
    }
}

const POLL: &str = "--file-system-poll-wait-seconds";

/// The `estimator-serve` binary, run with `args` (and `--port 0`; not polling for versions
/// unless `args` ask it to) under a descriptor limit of `descriptors` when given; killed
/// when dropped.
pub(crate) struct Binary {
    child: Child,
    pub(crate) url: String,
    /// Every line the server logged up to the one saying where it listens.
    pub(crate) log: Vec<String>,
    /// The lines logged since (read all along, so that the server never blocks on a full
    /// pipe).
    later: std::sync::mpsc::Receiver<String>,
}

impl Binary {
    pub(crate) fn start(args: &[&str], descriptors: Option<u64>) -> Self {
        let binary = env!("CARGO_BIN_EXE_estimator-serve");
        let limit = descriptors.map_or(String::new(), |n| format!("ulimit -n {n} && "));
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("{limit}exec \"$0\" \"$@\""))
            .arg(binary)
            .args(args)
            .args(["--port", "0"])
            .args(
                (!args.contains(&POLL))
                    .then_some([POLL, "0"])
                    .into_iter()
                    .flatten(),
            )
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines, received) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut log = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match received.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the server did not start; it logged:\n{}", log.join("\n"));
                }
            };
            log.push(line.clone());
            if let Some(at) = line.find("serving the REST API on http://") {
                let url = line[at + "serving the REST API on ".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .to_string();
                return Self {
                    child,
                    url,
                    log,
                    later: received,
                };
            }
        }
    }

    /// The lines logged since the server started listening, waiting up to `within` for one
    /// that contains `text`.
    pub(crate) fn logged(&self, text: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut lines = Vec::new();
        while let Ok(line) = self
            .later
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let found = line.contains(text);
            lines.push(line);
            if found {
                break;
            }
        }
        lines
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the `estimator-serve` binary run with `args` logs before it exits, and its exit
/// status; it must exit within two minutes.
pub(crate) fn run_to_exit(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_estimator-serve"))
        .args(args)
        .args(["--port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("estimator-serve {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().unwrap())
}

/// Copies the export directory `from` to `to`, file by file.
pub(crate) fn copy_export(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}
