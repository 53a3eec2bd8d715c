//! The `estimator-launch` binary as a user runs it: real processes, every wait bounded, no
//! process left behind.

mod harness;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use harness::{alive, gone_soon, run, started_pid, started_pids, Finished, Launcher};

#[test]
fn every_task_gets_its_tf_config_and_its_output_comes_back_prefixed() {
    let done = run(&["--workers", "2", "--", "sh", "-c", "echo \"$TF_CONFIG\""]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert_eq!(done.stdout.len(), 3, "{:#?}", done.stdout);
    let mut prefixes = HashSet::new();
    let mut clusters = Vec::new();
    for line in &done.stdout {
        let (prefix, json) = line.split_once("] ").expect("a prefixed line");
        let prefix = prefix.strip_prefix('[').unwrap();
        let config: Value = serde_json::from_str(json).unwrap();
        let task = &config["task"];
        assert_eq!(
            format!("{}:{}", task["type"].as_str().unwrap(), task["index"]),
            prefix
        );
        assert_eq!(config["environment"], "cloud");
        prefixes.insert(prefix.to_string());
        clusters.push(config["cluster"].clone());
    }
    assert_eq!(
        prefixes,
        HashSet::from(["chief:0", "worker:0", "worker:1"].map(String::from))
    );
    assert!(clusters.iter().all(|c| *c == clusters[0]), "{clusters:?}");
    let cluster = clusters[0].as_object().unwrap();
    assert_eq!(
        cluster.keys().collect::<HashSet<_>>(),
        HashSet::from([&"chief".to_string(), &"worker".to_string()])
    );
    assert_eq!(cluster["chief"].as_array().unwrap().len(), 1);
    assert_eq!(cluster["worker"].as_array().unwrap().len(), 2);
    let ports: HashSet<&str> = ["chief", "worker"]
        .iter()
        .flat_map(|role| cluster[*role].as_array().unwrap())
        .map(|a| a.as_str().unwrap().strip_prefix("127.0.0.1:").unwrap())
        .collect();
    assert_eq!(ports.len(), 3, "{cluster:?}");
    assert_eq!(started_pids(&done.stderr).len(), 3, "{:#?}", done.stderr);
}

/// Each task's stdout lines by task name (`chief:0`), without the prefix.
fn lines_by_task(stdout: &[String]) -> HashMap<String, Vec<String>> {
    let mut by_task: HashMap<String, Vec<String>> = HashMap::new();
    for line in stdout {
        let (prefix, rest) = line.split_once("] ").expect("a prefixed line");
        let task = prefix.strip_prefix('[').unwrap().to_string();
        by_task.entry(task).or_default().push(rest.to_string());
    }
    by_task
}

#[test]
fn gpus_are_shared_out_one_per_task_and_ps_tasks_get_none() {
    let done = run(&[
        "--workers",
        "3",
        "--ps",
        "1",
        "--evaluator",
        "--gpus",
        "2",
        "--",
        "sh",
        "-c",
        "echo \"gpu=${CUDA_VISIBLE_DEVICES-unset}\"",
    ]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    // Round-robin in rank order (chief, workers), then the evaluator: slot 4 of 2 GPUs.
    for (task, gpu) in [
        ("chief:0", "gpu=0"),
        ("worker:0", "gpu=1"),
        ("worker:1", "gpu=0"),
        ("worker:2", "gpu=1"),
        ("evaluator:0", "gpu=0"),
        ("ps:0", "gpu="),
    ] {
        assert_eq!(seen.get(task), Some(&vec![gpu.to_string()]), "{seen:#?}");
    }
    let stderr = done.stderr.join("\n");
    assert!(
        stderr.contains("with GPU 1 (CUDA_VISIBLE_DEVICES=1)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("with no GPU (CUDA_VISIBLE_DEVICES=\"\")"),
        "{stderr}"
    );
    assert_eq!(started_pids(&done.stderr).len(), 6, "{stderr}");
}

#[test]
fn gpus_come_from_the_launchers_own_visible_devices_and_explain_names_them() {
    let launcher = env!("CARGO_BIN_EXE_estimator-launch");
    let done = Launcher::start_with(
        &["--workers", "1", "--gpus", "2", "--", launcher, "explain"],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6,7")],
    )
    .finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    let gpus = |task: &str| {
        seen[task]
            .iter()
            .find(|l| l.starts_with("gpus:"))
            .cloned()
            .unwrap_or_else(|| panic!("no gpus line for {task}: {seen:#?}"))
    };
    assert_eq!(
        gpus("chief:0"),
        "gpus:      cuda is GPU 4 (CUDA_VISIBLE_DEVICES=4)"
    );
    assert_eq!(
        gpus("worker:0"),
        "gpus:      cuda is GPU 6 (CUDA_VISIBLE_DEVICES=6)"
    );

    // Without --gpus every task sees what the launcher sees.
    let done = Launcher::start_with(
        &["--", "sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES\""],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6")],
    )
    .finish();
    let mut stdout = done.stdout;
    stdout.sort();
    assert_eq!(stdout, ["[chief:0] 4,6", "[worker:0] 4,6"]);

    let done = Launcher::start_with(
        &["--gpus", "3", "--", "true"],
        None,
        &[("CUDA_VISIBLE_DEVICES", "4,6")],
    )
    .finish();
    assert_eq!(done.code, Some(2));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: --gpus 3: CUDA_VISIBLE_DEVICES=\"4,6\" lists only 2 GPUs"]
    );
}

#[test]
fn the_chief_exit_code_is_returned_and_a_lingering_worker_is_killed_after_the_grace() {
    // The chief exits 3, worker 1 fails with 7, worker 0 sleeps until killed.
    let script = r#"
        if echo "$TF_CONFIG" | grep -q '"type": *"chief"'; then exit 3; fi
        if echo "$TF_CONFIG" | grep -q '"index": *1'; then exit 7; fi
        exec sleep 1000"#;
    let started = Instant::now();
    let done = run(&[
        "--workers",
        "2",
        "--grace-secs",
        "1",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let elapsed = started.elapsed();
    assert_eq!(done.code, Some(3), "{:#?}", done.stderr);
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    let stderr = done.stderr.join("\n");
    assert!(
        stderr.contains("estimator-launch: chief:0 exited with code 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("estimator-launch: worker:1 exited with code 7"),
        "{stderr}"
    );
    assert!(
        stderr.contains("estimator-launch: killing worker:0"),
        "{stderr}"
    );
    // The last line: every task's end, in start order, and whose code the launcher's is.
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 exited 3, worker:0 killed after the 1 s grace (137), \
         worker:1 exited 7; exit code 3 (chief:0's)",
        "{stderr}"
    );
    let pids = started_pids(&done.stderr);
    assert_eq!(pids.len(), 3, "{stderr}");
    for (task, pid) in pids {
        // Reaped by the launcher: not even a zombie is left.
        assert!(!alive(pid), "{task} (pid {pid}) is still there");
    }
}

#[test]
fn what_a_killed_task_started_is_swept_when_the_launcher_ends() {
    // The ps shell starts a background sleep, then waits; the chief exits once the sleep is
    // started. The shell is killed after the grace; the sleep is not the launcher's child and
    // goes with the tasks' process group.
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let script = format!(
        r#"if echo "$TF_CONFIG" | grep -q '"type": *"ps"'; then
               sleep 1000 & echo "bg $!"; touch '{ready}'; wait
           fi
           while [ ! -e '{ready}' ]; do sleep 0.05; done"#,
        ready = ready.display()
    );
    let done = run(&[
        "--workers",
        "0",
        "--ps",
        "1",
        "--grace-secs",
        "0",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let line = done
        .stdout
        .iter()
        .find_map(|l| l.strip_prefix("[ps:0] bg "))
        .unwrap_or_else(|| panic!("no background pid in {:#?}", done.stdout));
    let pid: u32 = line.parse().unwrap();
    assert!(
        gone_soon(pid),
        "the background sleep (pid {pid}) outlived the launcher"
    );
}

#[test]
fn a_killed_launcher_leaves_no_task_behind() {
    let mut launcher = Launcher::start(&["--workers", "1", "--", "sleep", "1000"], None);
    let chief = started_pid(&launcher.wait_for_stderr("started chief:0"));
    let worker = started_pid(&launcher.wait_for_stderr("started worker:0"));
    launcher.child.kill().unwrap();
    launcher.child.wait().unwrap();
    for pid in [chief, worker] {
        assert!(gone_soon(pid), "task pid {pid} outlived its launcher");
    }
}

#[test]
fn explain_describes_a_kubeflow_task() {
    let tf_config = r#"{"cluster": {"chief": ["127.0.0.1:2222"],
        "worker": ["127.0.0.1:2223", "iris-worker-1.invalid:2222"],
        "ps": ["127.0.0.1:2224"]},
        "task": {"type": "worker", "index": 1}, "environment": "cloud"}"#;
    let done =
        Launcher::start(&["explain", "--model-dir", "/model/iris"], Some(tf_config)).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let text = done.stdout.join("\n");
    for expected in [
        "task:      worker:1",
        "chief:     no (the chief is chief:0 at 127.0.0.1:2222)",
        "rank:      2 (world size 3)",
        "model_dir: /model/iris",
        "strategy:  ParameterServer (1 ps)",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    let peer = |name: &str| {
        done.stdout
            .iter()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
            .clone()
    };
    assert!(peer("chief:0").ends_with("resolves to 127.0.0.1"), "{text}");
    let unresolvable = peer("worker:1 (this task)");
    assert!(
        unresolvable.contains("iris-worker-1.invalid:2222  does not resolve: "),
        "{text}"
    );
}

#[test]
fn explain_names_a_torchrun_rank_without_waiting_for_the_rendezvous() {
    // No rank 0 listens at the rendezvous address: explain reads the variables only.
    let env = [
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29999"),
    ];
    let started = Instant::now();
    let done = Launcher::start_with(&["explain"], None, &env).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = done.stdout.join("\n");
    for expected in [
        "source:    torchrun (RANK=1, WORLD_SIZE=2)",
        "task:      worker:0",
        "rank:      1 (world size 2, local rank 1)",
        "strategy:  MultiWorkerMirrored (2 replicas)",
        "peers:     from the rendezvous at 127.0.0.1:29999 (MASTER_ADDR, MASTER_PORT), which \
         resolves to 127.0.0.1",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    // TF_CONFIG wins, and says so.
    let tf_config = r#"{"cluster": {"chief": ["127.0.0.1:2222"]}, "task": {"type": "chief"}}"#;
    let done = Launcher::start_with(&["explain"], Some(tf_config), &env).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    assert_eq!(
        done.stdout[0],
        "source:    TF_CONFIG (it wins over RANK and WORLD_SIZE, also set by torchrun)"
    );
}

#[test]
fn explain_rejects_an_unusable_launcher_variable_in_one_line() {
    let env = [("RANK", "one"), ("WORLD_SIZE", "2")];
    let done = Launcher::start_with(&["explain"], None, &env).finish();
    assert_eq!(done.code, Some(1));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: RANK = 'one' is not a non-negative integer (torchrun)"]
    );
}

#[test]
fn explain_rejects_a_malformed_tf_config_in_one_line() {
    let done = Launcher::start(&["explain"], Some(r#"{"cluster": {"worker": ["a:1"]}}"#)).finish();
    assert_eq!(done.code, Some(1));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: TF_CONFIG.task is missing (a cluster needs task.type and task.index)"]
    );
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for (args, expected) in [
        (&["--workers", "2"][..], "no command to run"),
        (
            &["--workers", "two", "--", "true"],
            "invalid value 'two' for '--workers <N>'",
        ),
        (
            &["--no-chief", "--workers", "0", "--", "true"],
            "--no-chief needs --workers 1",
        ),
        (&["sh", "-c", "true"], "unexpected argument 'sh'"),
    ] {
        let done = run(args);
        assert_eq!(done.code, Some(2), "{args:?}: {:#?}", done.stderr);
        assert_eq!(done.stderr.len(), 1, "{args:?}: {:#?}", done.stderr);
        assert!(
            done.stderr[0].starts_with("estimator-launch: error: ")
                && done.stderr[0].contains(expected),
            "{args:?}: {}",
            done.stderr[0]
        );
        assert!(done.stdout.is_empty());
    }
}

#[test]
fn a_command_that_does_not_exist_is_named_and_exits_127() {
    let done = run(&["--", "no-such-command-for-estimator-launch"]);
    assert_eq!(done.code, Some(127));
    assert_eq!(
        done.stderr,
        ["estimator-launch: error: cannot run 'no-such-command-for-estimator-launch': command not found"]
    );
}

#[test]
fn the_cores_and_heap_settings_go_to_the_tasks_unless_the_launcher_is_given_its_own() {
    let echo = "echo \"threads=${OMP_NUM_THREADS-unset}\"";
    let done = run(&["--workers", "3", "--ps", "1", "--", "sh", "-c", echo]);
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let cores = std::thread::available_parallelism().unwrap().get();
    let share = format!("threads={}", (cores / 4).max(1));
    let seen = lines_by_task(&done.stdout);
    for task in ["chief:0", "worker:0", "worker:2", "ps:0"] {
        assert_eq!(seen.get(task), Some(&vec![share.clone()]), "{seen:#?}");
    }
    let stderr = done.stderr.join("\n");
    assert!(
        stderr.contains(&format!(
            "CPU thread(s) per operation (OMP_NUM_THREADS={})",
            (cores / 4).max(1)
        )),
        "{stderr}"
    );

    // Given one, the launcher leaves it to the tasks, and `explain` reads it as they do.
    let launcher = env!("CARGO_BIN_EXE_estimator-launch");
    let args = ["--workers", "1", "--", launcher, "explain"];
    let done = Launcher::start_with(&args, None, &[("OMP_NUM_THREADS", "6")]).finish();
    assert_eq!(done.code, Some(0), "{:#?}", done.stderr);
    let seen = lines_by_task(&done.stdout);
    for task in ["chief:0", "worker:0"] {
        let threads = seen[task].iter().find(|l| l.starts_with("threads:"));
        assert_eq!(
            threads.map(String::as_str),
            Some("threads:   up to 6 per operation (OMP_NUM_THREADS=6)"),
            "{seen:#?}"
        );
    }
}

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
    let deadline = Instant::now() + harness::LIMIT;
    let status = loop {
        match child.try_wait().unwrap() {
            Some(status) => break status,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => panic!("estimator-launch still running after {:?}", harness::LIMIT),
        }
    };
    drop(guard);
    let stderr = lines.map_or_else(Vec::new, |lines| {
        lines.recv_timeout(harness::LIMIT).expect("stderr ends")
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

/// A shell script for every task: `$me` is its name (`chief0`, `worker1`), each start is
/// appended to `dir/starts`, then `body` runs.
fn task_script(dir: &std::path::Path, body: &str) -> String {
    format!(
        r#"me=$(echo "$TF_CONFIG" | sed 's/.*"task": *{{"type": *"\([a-z]*\)", *"index": *\([0-9]*\)}}.*/\1\2/')
           cd '{dir}'
           echo "$me" >> starts
           {body}"#,
        dir = dir.display()
    )
}

/// Runs the launcher with `args` and, as every task's command, `sh -c` of [`task_script`]
/// (`dir`, `body`): how it ended, and its stderr as one text.
fn run_tasks(dir: &std::path::Path, args: &[&str], body: &str) -> (Finished, String) {
    let script = task_script(dir, body);
    let done = run(&[args, &["--", "sh", "-c", &script]].concat());
    let stderr = done.stderr.join("\n");
    (done, stderr)
}

fn starts(dir: &std::path::Path) -> Vec<String> {
    let mut starts: Vec<String> = std::fs::read_to_string(dir.join("starts"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    starts.sort();
    starts
}

#[test]
fn a_chief_that_fails_for_good_is_not_restarted_though_its_peers_exit_retryably_first() {
    // The chief fails (exit 1) but takes a while to go; the workers notice at once and exit
    // with a lost peer's 128 before it has.
    let dir = tempfile::tempdir().unwrap();
    let (done, stderr) = run_tasks(
        dir.path(),
        &["--workers", "2", "--max-restarts", "2"],
        r#"if [ "$me" = chief0 ]; then touch failed; sleep 0.5; exit 1; fi
           while [ ! -e failed ]; do sleep 0.02; done
           exit 128"#,
    );
    assert_eq!(done.code, Some(1), "{stderr}");
    assert_eq!(
        starts(dir.path()),
        ["chief0", "worker0", "worker1"],
        "{stderr}"
    );
    assert!(!stderr.contains("restarting"), "{stderr}");
    assert!(
        stderr.contains("the job has failed: codes 1 to 127 are not retried"),
        "{stderr}"
    );
    let summary = done
        .stderr
        .iter()
        .find(|l| l.contains("the job failed: "))
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    assert!(
        summary.contains("the job failed: chief:0 failed first, with code 1; after it: ")
            && summary.contains("worker:0 (128)")
            && summary.contains("worker:1 (128)"),
        "{summary}"
    );
}

#[test]
fn a_worker_that_fails_for_good_fails_the_job_with_its_code() {
    // Worker 0 has a configuration error (exit 3); the chief loses it (128): the job's
    // code is the worker's, since a restart would fail the same way.
    let dir = tempfile::tempdir().unwrap();
    let (done, stderr) = run_tasks(
        dir.path(),
        &["--workers", "1", "--max-restarts", "1"],
        r#"if [ "$me" = worker0 ]; then touch failed; exit 3; fi
           while [ ! -e failed ]; do sleep 0.02; done
           sleep 0.1; exit 128"#,
    );
    assert_eq!(done.code, Some(3), "{stderr}");
    assert_eq!(starts(dir.path()), ["chief0", "worker0"], "{stderr}");
    assert!(
        stderr.contains(
            "estimator-launch: the job failed: worker:0 failed first, with code 3; after it: \
             chief:0 (128)"
        ),
        "{stderr}"
    );
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 exited 128, worker:0 exited 3; exit code 3 (worker:0's, \
         which failed first)",
        "{stderr}"
    );
}

#[test]
fn replicas_that_exit_retryably_restart_together_once_the_group_has_settled() {
    // Worker 1 loses a peer (128) in the first incarnation while the others still run: they
    // are given a moment, then killed, and the three start again and finish.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (done, stderr) = run_tasks(
        dir.path(),
        &["--workers", "2", "--max-restarts", "1"],
        r#"if [ "$(grep -c . starts)" -gt 3 ]; then exit 0; fi
           if [ "$me" = worker1 ]; then exit 128; fi
           exec sleep 1000"#,
    );
    assert_eq!(done.code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "worker:1 exited with code 128: restarting chief:0, worker:0, worker:1 together \
             (1 of 1)"
        ),
        "{stderr}"
    );
    assert_eq!(starts(dir.path()).len(), 6, "{stderr}");
    // Held for the others' exits, at most the settling time, not the grace.
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 exited 0 (restarted 1 time), worker:0 exited 0 (restarted 1 \
         time), worker:1 exited 0 (restarted 1 time); exit code 0 (chief:0's)",
        "{stderr}"
    );
}

/// A task's shell lines that wait until the process whose pid the file `stopped` holds is
/// stopped (the test's own bound limits the wait).
const WAIT_STOPPED: &str = r#"
    until [ -s stopped ] && [ "$(cut -d' ' -f3 /proc/$(cat stopped)/stat 2>/dev/null)" = T ]; do
        sleep 0.02
    done"#;

#[test]
fn a_stopped_task_named_lost_by_every_other_is_ended_without_waiting_the_grace() {
    // Worker 1 stops itself (SIGSTOP, as a frozen process); the others then exit as a lost
    // peer makes them, naming it. The default grace is 90 s.
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        r#"if [ "$me" = worker1 ]; then echo $$ > stopped.tmp; mv stopped.tmp stopped; kill -STOP $$; exit 0; fi
           {WAIT_STOPPED}
           echo "task: error: lost worker:1: silent for 10.0s" >&2
           exit 128"#
    );
    let started = Instant::now();
    let (done, stderr) = run_tasks(dir.path(), &["--workers", "2"], &body);
    let elapsed = started.elapsed();
    assert_eq!(done.code, Some(128), "{stderr}");
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}\n{stderr}");
    assert!(
        stderr.contains(
            "estimator-launch: ending worker:1: every other task has exited, and chief:0 and \
             worker:0 named it lost (SIGTERM, then SIGKILL after 3 s)"
        ),
        "{stderr}"
    );
    // A stopped process dies only of the SIGKILL.
    assert!(
        stderr.contains("estimator-launch: worker:1 exited with code 137 (killed by signal 9)"),
        "{stderr}"
    );
    // The grace may be announced (the chief can exit a poll before worker 0), but not
    // waited: the launch ended well within its 90 s (the bound above).
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 exited 128, worker:0 exited 128, worker:1 ended after \
         chief:0 and worker:0 named it lost (137); exit code 128 (chief:0's)",
        "{stderr}"
    );
    for (task, pid) in started_pids(&done.stderr) {
        assert!(!alive(pid), "{task} (pid {pid}) is still there");
    }
}

#[test]
fn a_chief_named_lost_ends_on_sigterm_and_its_code_is_the_launchers() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (done, stderr) = run_tasks(
        dir.path(),
        &["--workers", "1"],
        r#"if [ "$me" = chief0 ]; then touch up; exec sleep 1000; fi
           while [ ! -e up ]; do sleep 0.02; done
           echo "task: error: training failed: lost chief:0: connection lost" >&2
           exit 128"#,
    );
    assert_eq!(done.code, Some(143), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 ended after worker:0 named it lost (143), worker:0 exited \
         128; exit code 143 (chief:0's)",
        "{stderr}"
    );
}

#[test]
fn a_named_task_is_not_ended_while_a_task_no_one_named_still_runs() {
    // Worker 0 names worker 1 lost and exits, but the chief, not named, runs on for a second:
    // worker 1 is ended only once the chief too has exited.
    let dir = tempfile::tempdir().unwrap();
    let (done, stderr) = run_tasks(
        dir.path(),
        &["--workers", "2", "--grace-secs", "1"],
        r#"if [ "$me" = worker1 ]; then exec sleep 1000; fi
           if [ "$me" = worker0 ]; then echo "task: error: lost worker:1: gone" >&2; touch named; exit 128; fi
           while [ ! -e named ]; do sleep 0.02; done
           sleep 1; exit 0"#,
    );
    assert_eq!(done.code, Some(0), "{stderr}");
    let at = |needle: &str| {
        done.stderr
            .iter()
            .position(|l| l.starts_with(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in {stderr}"))
    };
    assert!(
        at("estimator-launch: chief:0 exited with code 0")
            < at(
                "estimator-launch: ending worker:1: every other task has exited, and worker:0 \
                  named it lost"
            ),
        "{stderr}"
    );
    assert_eq!(
        done.stderr.last().unwrap(),
        "estimator-launch: chief:0 exited 0, worker:0 exited 128, worker:1 ended after worker:0 \
         named it lost (143); exit code 0 (chief:0's)",
        "{stderr}"
    );
}
