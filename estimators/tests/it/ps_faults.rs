//! Parameter-server clusters under `estimator-launch` with a task frozen (SIGSTOP) or
//! killed: every task notices within the peer timeout and exits with a retryable code
//! naming the task at fault.

use std::time::{Duration, Instant};

use crate::cluster::{error_line, signal};
use crate::ps_cluster::Launched;

#[test]
fn a_stopped_ps_is_named_by_every_training_task_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Launched::past_first_checkpoint(
        dir.path(),
        &["--workers", "1", "--ps", "1", "--grace-secs", "3"],
        "100000000",
        &["--peer-timeout-secs", "5"],
    );
    let ps = cluster.pid("ps:0");
    assert!(signal("-STOP", ps));
    let stopped = Instant::now();
    let exits = exit_times(&cluster, stopped, &["chief:0", "worker:0"]);
    let code = cluster.wait(Duration::from_secs(60));
    let waited = stopped.elapsed();
    let stderr = cluster.stderr();
    signal("-KILL", ps);
    assert!(code >= 128, "launcher exit {code}\n{stderr}");
    for task in ["chief:0", "worker:0"] {
        assert!(
            stderr.contains(&format!("{task} exited with code 128")),
            "{task}\n{stderr}"
        );
        let error = error_line(&stderr, &format!("[{task}] "));
        assert!(error.contains("lost ps:0"), "{error}");
    }
    // Every task names the ps at the timeout plus the common margin (1 s here) after its
    // last answer, which came just before the stop: none waits longer than another.
    for exit in &exits {
        assert!(
            (Duration::from_millis(5_500)..Duration::from_millis(6_700)).contains(exit),
            "exits {exits:?} after the stop\n{stderr}"
        );
    }
    let skew = exits[0].abs_diff(exits[1]);
    assert!(
        skew < Duration::from_millis(400),
        "the chief and the worker exited {skew:?} apart ({exits:?})\n{stderr}"
    );
    // The launcher kills the frozen ps after its 3 s grace and says so, with the code.
    assert!(
        stderr.contains("ps:0 exited with code 137 (killed by signal 9)"),
        "{stderr}"
    );
    assert!(
        waited < Duration::from_secs(7 + 3 + 2),
        "{waited:?}\n{stderr}"
    );
}

/// How long after `since` the launcher reported each of `tasks` exited, watching its
/// output every 20 ms (for up to 30 s).
fn exit_times(cluster: &Launched, since: Instant, tasks: &[&str]) -> Vec<Duration> {
    let mut exits: Vec<Option<Duration>> = vec![None; tasks.len()];
    while exits.iter().any(Option::is_none) && since.elapsed() < Duration::from_secs(30) {
        let stderr = cluster.stderr();
        for (task, exit) in tasks.iter().zip(&mut exits) {
            if exit.is_none() && stderr.contains(&format!("{task} exited with code")) {
                *exit = Some(since.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    exits
        .into_iter()
        .zip(tasks)
        .map(|(exit, task)| exit.unwrap_or_else(|| panic!("{task} never exited")))
        .collect()
}

#[test]
fn a_killed_worker_in_synchronous_mode_stops_the_chief_with_a_retryable_code_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Launched::past_first_checkpoint(
        dir.path(),
        &["--workers", "1", "--ps", "1", "--grace-secs", "3"],
        "100000000",
        &["--peer-timeout-secs", "5", "--ps-mode", "sync"],
    );
    assert!(signal("-KILL", cluster.pid("worker:0")));
    let killed = Instant::now();
    let code = cluster.wait(Duration::from_secs(60));
    let stderr = cluster.stderr();
    assert!(code >= 128, "launcher exit {code}\n{stderr}");
    assert!(
        stderr.contains("chief:0 exited with code 128"),
        "the chief's code is retryable\n{stderr}"
    );
    let error = error_line(&stderr, "[chief:0] ");
    assert!(error.contains("lost worker:0"), "{error}");
    assert!(killed.elapsed() < Duration::from_secs(15), "{stderr}");
}
