//! Tasks that fail, exit retryably, stop or are named lost by their peers: restarts and
//! endings.

use std::time::{Duration, Instant};

use crate::harness::{alive, run, started_pids, Finished};

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
