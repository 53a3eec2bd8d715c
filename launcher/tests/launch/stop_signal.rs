//! The launcher's own Ctrl-C: passed on to the tasks as SIGTERM, training tasks first, and
//! a task that does not exit on it killed after the grace.

use std::time::{Duration, Instant};

use crate::harness::{alive, started_pids, Launcher, LIMIT};

#[test]
fn ctrl_c_reaches_the_training_tasks_then_the_ps_and_the_grace_bounds_a_task_that_stays() {
    let dir = tempfile::tempdir().unwrap();
    // Every task notes the SIGTERM it gets; the training tasks then exit 143, the ps stays.
    let script = format!(
        r#"me=$(echo "$TF_CONFIG" | sed 's/.*"task": *{{"type": *"\([a-z]*\)", *"index": *\([0-9]*\)}}.*/\1\2/')
           cd '{dir}'
           if [ "$me" = ps0 ]; then
               trap 'echo "$me" >> signalled' TERM
           else
               trap 'echo "$me" >> signalled; exit 143' TERM
           fi
           touch "$me.up"
           while :; do sleep 0.05; done"#,
        dir = dir.path().display()
    );
    let args = ["--workers", "1", "--ps", "1", "--grace-secs", "2"];
    let launcher = Launcher::start(&[&args[..], &["--", "sh", "-c", &script]].concat(), None);
    let deadline = Instant::now() + LIMIT;
    while ["chief0", "worker0", "ps0"]
        .iter()
        .any(|task| !dir.path().join(format!("{task}.up")).exists())
    {
        assert!(Instant::now() < deadline, "the tasks did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = launcher.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let done = launcher.finish();
    let stderr = done.stderr.join("\n");
    assert_eq!(done.code, Some(143), "{stderr}");
    assert!(
        stderr.contains(
            "estimator-launch: SIGINT: passing it on to every task as SIGTERM, training tasks \
             first, 2 s to exit"
        ),
        "{stderr}"
    );
    let signalled = std::fs::read_to_string(dir.path().join("signalled")).unwrap();
    let order: Vec<&str> = signalled.lines().collect();
    assert_eq!(order.len(), 3, "{signalled}");
    assert_eq!(order[2], "ps0", "the ps is told last: {signalled}");
    assert!(
        stderr.contains("killing ps:0: still running 2 s after the launcher passed SIGINT on"),
        "{stderr}"
    );
    for (task, pid) in started_pids(&done.stderr) {
        assert!(!alive(pid), "{task} (pid {pid}) still runs");
    }
}
