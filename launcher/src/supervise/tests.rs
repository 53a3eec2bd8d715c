use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::running::{describe, exit_code};
use super::*;

#[test]
fn exit_codes_are_what_a_shell_reports() {
    assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
    assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
    assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
    assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    assert_eq!(
        describe(ExitStatus::from_raw(9)),
        "exited with code 137 (killed by signal 9)"
    );
    assert_eq!(describe(ExitStatus::from_raw(7 << 8)), "exited with code 7");
}

#[test]
fn a_missing_command_is_127() {
    let e = io::Error::from(io::ErrorKind::NotFound);
    let failure = spawn_failure(&OsString::from("no-such-tool"), &e);
    assert_eq!(failure.code, 127);
    assert_eq!(
        failure.message,
        "cannot run 'no-such-tool': command not found"
    );
}

#[test]
fn a_restart_awaited_when_the_launcher_is_told_to_stop_is_not_made() {
    use std::cell::Cell;
    use std::time::Instant;

    use estimator_cluster::TaskType;

    let start = |script: &str| {
        Command::new("/bin/sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .spawn()
            .unwrap()
    };
    let chief = Task {
        kind: TaskType::Chief,
        index: 0,
    };
    let worker = Task {
        kind: TaskType::Worker,
        index: 0,
    };
    // The chief takes longer than the group's settling to stop (a last checkpoint); the
    // worker's retryable exit waits for the group when the signal comes.
    let mut tasks = vec![
        Running::started(chief, start("trap '' TERM; exec sleep 10")),
        Running::started(worker, start("exit 137")),
    ];
    let spawned = Cell::new(0);
    let mut spawn = |_: Task| -> io::Result<Child> {
        spawned.set(spawned.get() + 1);
        Err(io::Error::other(
            "no task is started again once told to stop",
        ))
    };
    let restart = Restart {
        max: 1,
        spawn: &mut spawn,
        together: vec![chief, worker],
    };
    let (stop, received) = StopSignal::unwatched();
    let raise = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        received.store(2, std::sync::atomic::Ordering::SeqCst);
    });
    let began = Instant::now();
    let grace = Duration::from_secs(2);
    supervise(
        &mut tasks,
        chief,
        grace,
        restart,
        &Blame::default(),
        Some(&stop),
    );
    raise.join().unwrap();
    assert_eq!(spawned.get(), 0);
    assert_eq!(tasks[1].exit, Some(137));
    assert!(tasks.iter().all(|t| t.exit.is_some()));
    assert!(began.elapsed() < Duration::from_secs(5));
}
