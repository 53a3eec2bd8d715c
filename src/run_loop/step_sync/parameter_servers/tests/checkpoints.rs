//! The chief's checkpoint: put back on a restarted ps while a worker waits for it, and taken
//! at the step other workers moved the ps tasks to.

use std::sync::{mpsc, Mutex};

use burn::nn::Linear;

use super::super::super::{Ready, StepSync, Synced};
use super::super::PsSync;
use super::{chief, config, gradients, names, sgd, start, state, steps, State};
use crate::checkpoint::CheckpointManager;
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{Intercepted, PsMode, PsReplica, PsSession, PullAnswer, PushAnswer};
use crate::distribute::{LocalStep, StepLoss};
use crate::state::parameter_values;

/// One training step of the chief's driver: what the exchange did.
fn step(sync: &mut PsSync, state: State) -> (State, &'static str) {
    let (state, go) = sync.ready(state, true).unwrap();
    assert!(matches!(go, Ready::Compute { .. }), "the job goes on");
    let local = LocalStep {
        grads: gradients(&state.model),
        loss: StepLoss::Known(0.0),
    };
    let (state, synced) = sync.exchange(state, Some(local)).unwrap();
    let synced = match synced {
        Synced::Applied { .. } => "applied",
        Synced::Skipped => "skipped",
        Synced::Stop => "stop",
        Synced::Apply(_) => "apply here",
    };
    (state, synced)
}

#[test]
fn the_chief_puts_its_checkpoint_back_on_a_restarted_ps_while_a_worker_waits_for_it() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, state(0), &|_| 100).unwrap();
    let (sent, pulls) = mpsc::channel();
    let sent = Mutex::new(sent);
    let reporting = Intercepted::new(ps.client(1, config())).on_pull(move |_| {
        let _ = sent.lock().unwrap().send(());
    });
    let mut worker = PsSession::new(
        PsReplica::new(Box::new(reporting), 1, names()),
        PsMode::default(),
    );
    assert!(matches!(
        worker.pull().unwrap(),
        PullAnswer::Values { step: 0, .. }
    ));
    pulls.recv().unwrap();
    for _ in 0..2 {
        let synced;
        (state, synced) = step(&mut sync, state);
        assert_eq!(synced, "applied");
    }
    let (next, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, state, None).unwrap();
    CheckpointManager::new(dir.path(), None)
        .save(&checkpoint)
        .unwrap();
    let saved = parameter_values(&next.model);
    let (state, synced) = step(&mut sync, next);
    assert_eq!((synced, state.global_step), ("applied", 3));
    ps.restart(1, sgd());
    let state = std::thread::scope(|scope| {
        // The worker's pull waits on ps:1 for the chief to put the variables back.
        let waiting = scope.spawn(|| worker.pull());
        pulls.recv().unwrap();
        // The chief's next step brings back the values of its last push; its push finds
        // ps:1 empty, and it puts the checkpoint back on both.
        let (state, synced) = step(&mut sync, state);
        assert_eq!((synced, state.global_step), ("skipped", 2));
        let (state, go) = sync.ready(state, true).unwrap();
        assert!(
            matches!(go, Ready::Compute { seed_step: 2 }),
            "back at the checkpoint"
        );
        assert_eq!(state.global_step, 2);
        let PullAnswer::Values { step, values } = waiting.join().unwrap().unwrap() else {
            panic!("the worker's pull gives values");
        };
        assert_eq!(step, 2);
        for (path, (_, v)) in &saved {
            assert_eq!(&values[path], v, "{path} as checkpointed");
        }
        state
    });
    assert_eq!(steps(&ps), [2, 2]);
    let grads: Vec<_> = parameter_values(&state.model)
        .into_iter()
        .map(|(path, (_, v))| (path, vec![0.0; v.len()]))
        .collect();
    assert_eq!(
        worker.push(Vec::new(), grads).unwrap(),
        PushAnswer::Applied(3)
    );
}

#[test]
fn the_chiefs_checkpoint_takes_the_ps_step_that_other_workers_moved_on() {
    let ps = start(2);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = chief(ps.client(0, config()), dir.path());
    let start = state(0);
    let (start, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, start, &|_| 100).unwrap();
    let mut worker = PsSession::new(
        PsReplica::in_memory(&ps, 1, names(), config()),
        PsMode::default(),
    );
    let mut pulled = Default::default();
    for expected in 0..=3 {
        let PullAnswer::Values { step, values } = worker.pull().unwrap() else {
            panic!("a pull gives values");
        };
        assert_eq!(step, expected);
        pulled = values;
        if expected < 3 {
            let grads = pulled
                .iter()
                .map(|(path, v)| (path.clone(), vec![1.0; v.len()]));
            let answer = worker.push(Vec::new(), grads.collect::<Vec<_>>()).unwrap();
            assert_eq!(answer, PushAnswer::Applied(expected + 1));
        }
    }
    // The chief last saw step 0; its checkpoint, and its state, are at the ps tasks' 3.
    let (state, checkpoint) = StepSync::<B, Linear<B>>::snapshot(&mut sync, start, None).unwrap();
    assert_eq!(checkpoint.global_step, 3);
    assert_eq!(state.global_step, 3);
    for (path, (_, v)) in parameter_values(&state.model) {
        assert_eq!(v, pulled[&path], "{path}");
    }
}
