//! Runs the `estimator-launch` binary as a user would, its output lines collected as they
//! come, every wait bounded, the launcher killed when a test fails.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Longest a launcher run may take in these tests before it is killed and the test fails.
pub const LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// A running launcher whose output lines arrive as they are printed; killed when dropped.
pub struct Launcher {
    pub child: Child,
    pub lines: mpsc::Receiver<(Stream, String)>,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

/// How a launcher run ended.
pub struct Finished {
    pub code: Option<i32>,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Launcher {
    pub fn start(args: &[&str], tf_config: Option<&str>) -> Launcher {
        Launcher::start_with(args, tf_config, &[])
    }

    /// Starts the launcher with `env` as its own variables among the ones it reads besides
    /// TF_CONFIG (CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS); those not named
    /// are unset.
    pub fn start_with(args: &[&str], tf_config: Option<&str>, env: &[(&str, &str)]) -> Launcher {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_estimator-launch"));
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("OMP_NUM_THREADS")
            .envs(env.iter().copied());
        match tf_config {
            Some(text) => cmd.env("TF_CONFIG", text),
            None => cmd.env_remove("TF_CONFIG"),
        };
        let mut child = cmd.spawn().expect("estimator-launch starts");
        let (send, lines) = mpsc::channel();
        forward(child.stdout.take().unwrap(), Stream::Out, send.clone());
        forward(child.stderr.take().unwrap(), Stream::Err, send);
        Launcher {
            child,
            lines,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    fn keep(&mut self, stream: Stream, line: String) {
        match stream {
            Stream::Out => self.stdout.push(line),
            Stream::Err => self.stderr.push(line),
        }
    }

    /// The first stderr line containing `needle`, waiting at most [`LIMIT`] for it.
    pub fn wait_for_stderr(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(line) = self.stderr.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((stream, line)) => self.keep(stream, line),
                Err(_) => panic!(
                    "no stderr line with {needle:?} within {LIMIT:?}; stderr: {:#?}",
                    self.stderr
                ),
            }
        }
    }

    /// Waits at most [`LIMIT`] for the launcher to exit and its output to end.
    pub fn finish(mut self) -> Finished {
        let deadline = Instant::now() + LIMIT;
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok((stream, line)) => self.keep(stream, line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "estimator-launch still running after {LIMIT:?}; stdout: {:#?} stderr: {:#?}",
                    self.stdout, self.stderr
                ),
            }
        }
        let status = loop {
            match self.child.try_wait().unwrap() {
                Some(status) => break status,
                None if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                None => panic!("estimator-launch closed its output but did not exit"),
            }
        };
        Finished {
            code: status.code(),
            stdout: std::mem::take(&mut self.stdout),
            stderr: std::mem::take(&mut self.stderr),
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // On a failed test: the launcher's death makes it kill its tasks.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn forward(
    source: impl Read + Send + 'static,
    stream: Stream,
    send: mpsc::Sender<(Stream, String)>,
) {
    thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { return };
            if send.send((stream, line)).is_err() {
                return;
            }
        }
    });
}

pub fn run(args: &[&str]) -> Finished {
    Launcher::start(args, None).finish()
}

/// The pid in a launcher line `estimator-launch: started worker:0 (pid 1234) on …`.
pub fn started_pid(line: &str) -> u32 {
    let rest = line.split("(pid ").nth(1).expect("a started line");
    rest.split(')').next().unwrap().parse().unwrap()
}

pub fn started_pids(stderr: &[String]) -> Vec<(String, u32)> {
    stderr
        .iter()
        .filter_map(|l| l.strip_prefix("estimator-launch: started "))
        .map(|rest| {
            let task = rest.split(' ').next().unwrap().to_string();
            (task, started_pid(rest))
        })
        .collect()
}

/// Whether a process with this pid exists (a zombie counts).
pub fn alive(pid: u32) -> bool {
    Command::new("sh")
        .args(["-c", &format!("kill -0 {pid} 2>/dev/null")])
        .status()
        .unwrap()
        .success()
}

/// Waits (bounded) for `pid` to be gone: an orphan is reaped by init a moment after it dies.
pub fn gone_soon(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
    true
}
