//! How the job ends: the chief's exit code, lingering tasks killed, what tasks started
//! swept, nothing left behind by a killed launcher.

use std::time::{Duration, Instant};

use crate::harness::{alive, gone_soon, run, started_pid, started_pids, Launcher};

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
