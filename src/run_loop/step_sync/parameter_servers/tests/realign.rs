//! The chief realigning ps tasks whose steps parted, and training on to the last step.

use std::sync::Mutex;

use burn::nn::Linear;

use super::super::super::{Ready, StepSync, Synced};
use super::super::PsSync;
use super::{config, gradients, start, state, steps};
use crate::checkpoint::CheckpointManager;
use crate::device::CpuTrainBackend as B;
use crate::distribute::ps::{InMemoryParameterServers, Intercepted, PsClient, PsMode, PsReplica};
use crate::distribute::{LocalStep, StepLoss};

/// The chief's client, whose first initialisation puts ps:1 `ahead` steps past ps:0: ps
/// tasks whose steps parted.
fn parted(inner: InMemoryParameterServers, ahead: u64) -> Intercepted {
    let ahead = Mutex::new(Some(ahead));
    Intercepted::new(inner).on_init(move |inner, mut inits| {
        if let Some(ahead) = ahead.lock().unwrap().take() {
            inits[1].global_step += ahead;
        }
        inner.init(inits)
    })
}

#[test]
fn a_chief_told_done_by_a_ps_ahead_of_the_others_realigns_them_and_trains_to_the_last_step() {
    let ps = start(2);
    let client = parted(ps.client(0, config()), 3);
    let replica = PsReplica::new(Box::new(client), 0, vec!["chief:0".to_string()]);
    let dir = tempfile::tempdir().unwrap();
    let mut sync = PsSync::new(
        replica,
        PsMode::default(),
        None,
        CheckpointManager::new(dir.path(), None),
    );
    let (mut state, _) = StepSync::<B, Linear<B>>::prepare(&mut sync, state(0), &|_| 5).unwrap();
    assert_eq!(steps(&ps), [0, 3], "parted from the start");
    let mut outcomes = Vec::new();
    for _ in 0..20 {
        let (ready, go) = sync.ready(state, true).unwrap();
        state = ready;
        if matches!(go, Ready::Stop) {
            break;
        }
        let local = LocalStep {
            grads: gradients(&state.model),
            loss: StepLoss::Known(0.0),
        };
        let (next, synced) = sync.exchange(state, Some(local)).unwrap();
        state = next;
        outcomes.push(match synced {
            Synced::Applied { .. } => "applied",
            Synced::Skipped => "realigned",
            Synced::Stop => "stop",
            Synced::Apply(_) => "apply here",
        });
        if outcomes.last() == Some(&"stop") {
            break;
        }
    }
    // ps:1 reaches 5 after two pushes and says the third one finds the job done, which
    // ps:0 applied (0 → 3); the chief puts both back at 3, and two more updates take both
    // to 5.
    assert_eq!(
        outcomes,
        [
            "applied",
            "applied",
            "realigned",
            "applied",
            "applied",
            "stop"
        ]
    );
    assert_eq!(steps(&ps), [5, 5]);
    assert_eq!(state.global_step, 5);
    StepSync::<B, Linear<B>>::finish(&mut sync, &state).expect("a job at its last step ends");
}
