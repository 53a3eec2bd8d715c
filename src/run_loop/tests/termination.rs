//! A run told to terminate: it stops after the step, the chief checkpoints it, and the peers
//! are neither left nor ended, since they stop at the same step.

use super::run;
use crate::checkpoint::CheckpointManager;
use crate::error::Error;

#[test]
fn a_termination_stops_after_the_step_with_a_checkpoint_and_neither_leaves_nor_ends() {
    // The hook would stop at step 3 too: terminating, the replica does not leave.
    let run = run("AAT", true, 0, 100, 3);
    match run.outcome {
        Err(Error::Terminated {
            global_step: 3,
            signal: None,
            checkpoint: true,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        run.calls.contains(&"snapshot at 3".to_string()),
        "{:?}",
        run.calls
    );
    assert!(
        run.calls.contains(&"abandon".to_string()),
        "{:?}",
        run.calls
    );
    for call in ["leave", "finish", "exchange at 3"] {
        assert!(
            !run.calls.iter().any(|c| c.starts_with(call)),
            "{:?}",
            run.calls
        );
    }
    assert!(
        run.calls
            .last()
            .unwrap()
            .starts_with("end at 3: training stopped at global_step 3"),
        "{:?}",
        run.calls
    );
    let manager = CheckpointManager::new(run.model_dir.path(), None);
    assert_eq!(manager.latest_step().unwrap(), Some(3));
}

#[test]
fn a_replica_that_is_not_the_chief_stops_without_a_checkpoint() {
    let run = run("T", false, 0, 100, u64::MAX);
    match run.outcome {
        Err(Error::Terminated { global_step: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        !run.calls.iter().any(|c| c.starts_with("snapshot")),
        "{:?}",
        run.calls
    );
}

#[test]
fn a_termination_at_the_last_step_ends_the_run_as_done() {
    // Steps 1 to 7 apply, the 8th (max_steps) reports a termination.
    let run = run("AAAAAAAT", true, 0, 100, u64::MAX);
    assert_eq!(run.outcome.unwrap().global_step, 8);
    assert!(
        run.calls.contains(&"finish at 8".to_string()),
        "{:?}",
        run.calls
    );
}
