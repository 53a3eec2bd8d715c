//! Each step's device batch is kept until a loss read shows the device is past it.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::estimator::LossReadback;
use crate::run_loop::loss_readout::MAX_QUEUED_STEPS;

/// `Line`, whose device batches count themselves while alive.
#[derive(Serialize, Deserialize)]
struct Counted {
    line: Line,
    #[serde(skip)]
    live: Arc<AtomicUsize>,
}

struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Estimator for Counted {
    type Model<Bk: Backend> = Linear<Bk>;
    type Batch = Vec<(f32, f32)>;
    type DeviceBatch<Bk: Backend> = (<Line as Estimator>::DeviceBatch<Bk>, Live);
    type Prediction = f32;

    fn run_config(&self) -> &RunConfig {
        self.line.run_config()
    }

    fn build_model<Bk: Backend>(&self, device: &Bk::Device) -> Linear<Bk> {
        self.line.build_model(device)
    }

    fn to_device<Bk: Backend>(
        &self,
        batch: &Self::Batch,
        device: &Bk::Device,
    ) -> Result<Self::DeviceBatch<Bk>> {
        self.live.fetch_add(1, Ordering::SeqCst);
        let live = Live(self.live.clone());
        Ok((self.line.to_device(batch, device)?, live))
    }

    fn loss<Bk: Backend>(
        &self,
        model: &Linear<Bk>,
        (batch, _): &Self::DeviceBatch<Bk>,
        device: &Bk::Device,
    ) -> Result<Tensor<Bk, 1>> {
        self.line.loss(model, batch, device)
    }

    fn predictions<Bk: Backend>(
        &self,
        model: &Linear<Bk>,
        (batch, _): &Self::DeviceBatch<Bk>,
        device: &Bk::Device,
    ) -> Result<Vec<f32>> {
        self.line.predictions(model, batch, device)
    }

    fn serving_signature(&self) -> Signature {
        self.line.serving_signature()
    }
}

/// Records how many device batches are alive when each step's hooks run.
struct LiveAtHooks(Arc<AtomicUsize>, Arc<Mutex<Vec<usize>>>);

impl Hook for LiveAtHooks {
    fn name(&self) -> &str {
        "live-at-hooks"
    }

    fn after_step(&mut self, _: &StepInfo, _: &mut Emit) -> Result<Control> {
        let live = self.0.load(Ordering::SeqCst);
        self.1.lock().unwrap().push(live);
        Ok(Control::Continue)
    }
}

/// The device batches alive at each of `steps` steps, batches built just before their step.
fn live_at_each_step(readback: LossReadback, steps: u64) -> Vec<usize> {
    let model_dir = tempfile::tempdir().unwrap();
    let estimator = Counted {
        line: Line {
            run_config: RunConfig::new(model_dir.path())
                .with_progress(false)
                .with_save_checkpoints_steps(1000)
                .with_log_step_count_steps(1000)
                .with_save_summary_steps(1000)
                .with_prefetch_to_device(0)
                .with_loss_readback(readback),
        },
        live: Arc::default(),
    };
    let sync = Scripted {
        script: Vec::new(),
        calls: Calls::default(),
        chief: true,
        start_step: 0,
    };
    let device = Default::default();
    let state = TrainState {
        model: estimator.build_model::<B>(&device),
        optimizer: Optimizer::new(&OptimizerSpec::sgd(0.01)),
        sync_replicas: 1,
        global_step: 0,
        device,
    };
    let data: Vec<Vec<(f32, f32)>> = (0..steps).map(|i| vec![((i % 8) as f32, 2.0)]).collect();
    let seen = Arc::default();
    let hook = LiveAtHooks(estimator.live.clone(), Arc::clone(&seen));
    let train_loop = TrainLoop {
        estimator: &estimator,
        sync: Box::new(sync),
        listener: None,
    };
    let spec = TrainSpec::max_steps(steps).with_hook(hook);
    let outcome = train_loop.run(state, from_vec(data), spec).unwrap();
    assert_eq!(outcome.global_step, steps);
    assert_eq!(estimator.live.load(Ordering::SeqCst), 0, "all released");
    let seen = seen.lock().unwrap().clone();
    seen
}

#[test]
fn each_steps_batch_is_kept_until_a_loss_read_shows_the_device_past_it() {
    // Only the first and the last step read (logging and summaries every 1000 steps).
    assert_eq!(
        live_at_each_step(LossReadback::WhenWanted, 8),
        [1, 1, 2, 3, 4, 5, 6, 7]
    );
    // One step late: step 1 is read at once, so step 2 has nothing to read and its batch
    // waits for step 3's read of it.
    assert_eq!(
        live_at_each_step(LossReadback::EveryStep, 8),
        [1, 1, 2, 1, 1, 1, 1, 1]
    );
}

#[test]
fn with_no_loss_wanted_for_long_the_loop_waits_for_the_device_every_so_many_steps() {
    let steps = 2 * MAX_QUEUED_STEPS as u64 + 10;
    let live = live_at_each_step(LossReadback::WhenWanted, steps);
    // Step 1 reads; steps 2.. pile up until MAX_QUEUED_STEPS are kept, then all are let go.
    let mut expected = vec![1];
    expected.extend(1..=MAX_QUEUED_STEPS);
    expected.extend(1..=MAX_QUEUED_STEPS);
    expected.extend(1..=9);
    assert_eq!(live, expected);
}
