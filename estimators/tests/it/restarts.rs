//! `estimator-launch --max-restarts` after the sequence that once made restarted replicas
//! chase each other until the restarts ran out: the chief stopped, the worker killed (and
//! restarted) meanwhile, the chief continued. Synchronous replicas restart together.

use std::time::Duration;

use estimator::checkpoint::CheckpointManager;

use crate::cluster::{signal, LIMIT};
use crate::ps_cluster::Launched;

#[test]
fn a_stopped_chief_and_a_killed_worker_recover_under_max_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Launched::past_first_checkpoint(
        dir.path(),
        &[
            "--workers",
            "1",
            "--max-restarts",
            "2",
            "--grace-secs",
            "10",
        ],
        "3000",
        &["--peer-timeout-secs", "5"],
    );
    let chief = cluster.pid("chief:0");
    assert!(signal("-STOP", chief));
    assert!(signal("-KILL", cluster.pid("worker:0")));
    std::thread::sleep(Duration::from_millis(300));
    // The launcher may have killed the stopped chief already, to restart both together.
    signal("-CONT", chief);
    let code = cluster.wait(LIMIT);
    let stderr = cluster.stderr();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("worker:0 exited with code 137 (killed by signal 9): restarting chief:0, worker:0 together (1 of 2)"),
        "{stderr}"
    );
    let manager = CheckpointManager::new(dir.path().join("model"), None);
    assert_eq!(manager.latest_step().unwrap(), Some(3000), "{stderr}");
}
