//! A launcher whose stdout or stderr is closed (`… | head -1`) still runs the job to its
//! end.

use std::time::{Duration, Instant};

/// Starts the launcher on a 2-task cluster whose tasks print a line, wait until `go`
/// exists, print many more lines to both streams and leave a file in `done` — with the
/// launcher's stdout (and, with `close_stderr`, its stderr too) closed after that first line,
/// as `estimator-launch … | head -1` (or `2>&1 | head -1`) does. Returns the launcher's exit
/// code and stderr (empty when closed).
fn launch_into_closed_pipe(close_stderr: bool) -> (Option<i32>, Vec<String>, usize) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let (go, done) = (dir.path().join("go"), dir.path().join("done"));
    std::fs::create_dir(&done).unwrap();
    let script = format!(
        r#"echo first
           while [ ! -e '{go}' ]; do sleep 0.02; done
           i=0; while [ $i -lt 2000 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
           touch '{done}'/$$"#,
        go = go.display(),
        done = done.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_estimator-launch"))
        .args(["--workers", "1", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("TF_CONFIG")
        .spawn()
        .unwrap();
    let guard = KillOnDrop(child.id());
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.ends_with("] first\n"), "{first:?}");
    // The read end goes: the next write to the launcher's stdout fails with EPIPE.
    let stderr = child.stderr.take().unwrap();
    let lines = if close_stderr {
        drop(stderr);
        None
    } else {
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let read: Vec<String> = BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect();
            let _ = send.send(read);
        });
        Some(lines)
    };
    std::fs::write(&go, "").unwrap();
    let deadline = Instant::now() + crate::harness::LIMIT;
    let status = loop {
        match child.try_wait().unwrap() {
            Some(status) => break status,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => panic!(
                "estimator-launch still running after {:?}",
                crate::harness::LIMIT
            ),
        }
    };
    drop(guard);
    let stderr = lines.map_or_else(Vec::new, |lines| {
        lines
            .recv_timeout(crate::harness::LIMIT)
            .expect("stderr ends")
    });
    let finished = std::fs::read_dir(&done).unwrap().count();
    (status.code(), stderr, finished)
}

/// Kills a process (if still there) when a test ends, failed or not.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[test]
fn a_closed_stdout_stops_the_relay_but_not_the_job() {
    let (code, stderr, finished) = launch_into_closed_pipe(false);
    let text = stderr.join("\n");
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(finished, 2, "every task runs to its end: {text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        text.contains("estimator-launch: chief:0 exited with code 0"),
        "{text}"
    );
    // Each task's stderr is still relayed whole.
    for task in ["chief:0", "worker:0"] {
        assert!(
            text.contains(&format!("[{task}] err 1999")),
            "{task}: {text}"
        );
    }
}

#[test]
fn closed_stdout_and_stderr_do_not_stop_the_job() {
    let (code, _, finished) = launch_into_closed_pipe(true);
    assert_eq!(code, Some(0));
    assert_eq!(finished, 2, "every task runs to its end");
}
