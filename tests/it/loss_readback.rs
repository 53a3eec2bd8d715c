//! Which steps' losses training reads back (`LossReadback`).

use estimator::hooks::{Control, Emit, Hook, StepInfo};
use estimator::{EstimatorExt, LossReadback, OptimizerSpec, TrainSpec};

use crate::support::{exploding_input, train_input, TinyClassifier};

/// Records which step's loss each step's hooks were shown.
struct LossSteps(std::sync::Arc<std::sync::Mutex<Vec<(u64, u64)>>>);

impl Hook for LossSteps {
    fn name(&self) -> &str {
        "loss_steps"
    }

    fn after_step(&mut self, s: &StepInfo, _: &mut Emit) -> estimator::Result<Control> {
        self.0.lock().unwrap().push((s.global_step, s.loss_step));
        Ok(Control::Continue)
    }
}

#[test]
fn losses_read_when_wanted_are_the_logged_steps_and_a_nan_still_stops_training() {
    let loss_steps = |readback: LossReadback| {
        let dir = tempfile::tempdir().unwrap();
        let mut est = TinyClassifier::new(dir.path());
        est.run_config = est.run_config.clone().with_loss_readback(readback);
        let seen = std::sync::Arc::default();
        let spec = TrainSpec::max_steps(25).with_hook(LossSteps(std::sync::Arc::clone(&seen)));
        let outcome = est.train(train_input, spec).unwrap();
        assert_eq!(outcome.global_step, 25);
        assert!(outcome.last_loss.is_some_and(f64::is_finite));
        let seen = seen.lock().unwrap().clone();
        seen
    };
    // Logging and summaries every 10 steps: those steps, the first and the last read their
    // own loss; the others show the latest read.
    let wanted = loss_steps(LossReadback::WhenWanted);
    let expected: Vec<(u64, u64)> = (1..=25)
        .map(|step| match step {
            1 | 25 => (step, step),
            _ => (step, (step / 10 * 10).max(1)),
        })
        .collect();
    assert_eq!(wanted, expected);
    // Every step's: one step late between the wanted ones.
    let every = loss_steps(LossReadback::EveryStep);
    assert_eq!(every[4], (5, 4));
    assert_eq!(every[9], (10, 10));
    // The default on the CPU, where a read costs nothing.
    assert_eq!(loss_steps(LossReadback::Auto), every);

    // A NaN at some step makes every later loss NaN: the next step read stops training.
    let dir = tempfile::tempdir().unwrap();
    let mut est = TinyClassifier::new(dir.path());
    est.dropout = 0.0;
    est.optimizer = OptimizerSpec::sgd(0.5);
    est.run_config = est
        .run_config
        .clone()
        .with_loss_readback(LossReadback::WhenWanted);
    let err = est
        .train(|| exploding_input(16), TrainSpec::max_steps(20))
        .unwrap_err()
        .to_string();
    assert!(err.contains("NaN/Inf loss guard"), "{err}");
}
