//! A replica's gradients for one step: one batch's, or the sum of several batches' taken one
//! after another (gradient accumulation, Horovod's `backward_passes_per_step`), so that an
//! update weighs as one larger batch while only one batch's activations are held at a time
//! and replicas synchronise once per update.

use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ElementConversion;

use super::device_input::DeviceInput;
use super::train_state::TrainState;
use crate::distribute::{LocalStep, StepLoss};
use crate::error::Result;
use crate::estimator::Estimator;
use crate::optimizer::accumulate_gradients;
use crate::seed::{step_seed, with_seed};

/// The training state of a replica of estimator `E`.
type State<B, E> = TrainState<B, <E as Estimator>::Model<B>>;

/// The input of a replica of estimator `E`, on its device.
type Input<'i, B, E> = DeviceInput<'i, <E as Estimator>::DeviceBatch<B>>;

/// The loss of `batch` and its gradients at `state`, with randomness seeded by `seed`; the
/// gradients of the loss times the state's loss scale, if any (`apply` divides them back).
/// The loss stays on the device: reading it here would wait for the step to finish.
pub(super) fn local_step<B: AutodiffBackend, E: Estimator>(
    estimator: &E,
    state: &State<B, E>,
    batch: &E::DeviceBatch<B>,
    seed: u64,
) -> Result<LocalStep> {
    let mut grads = GradientsParams::new();
    let loss = backward_pass(estimator, state, batch, seed, 1, &mut grads)?;
    Ok(LocalStep { grads, loss })
}

/// [`local_step`] over `first` and the next `passes − 1` batches of `input`: the mean of
/// their gradients and losses (each loss divided by `passes` before its backward pass, so
/// the sum is the mean of a batch `passes` times larger), or their sum for a loss that
/// sums its batch. The batch after the first is
/// seeded by `seed` and its number. `None` when the input ends first: the step is not
/// taken, as when a replica has no batch at all.
pub(super) fn accumulated_step<B: AutodiffBackend, E: Estimator>(
    estimator: &E,
    state: &State<B, E>,
    first: &E::DeviceBatch<B>,
    input: &mut Input<'_, B, E>,
    passes: usize,
    seed: u64,
) -> Result<Option<LocalStep>> {
    if passes <= 1 {
        return local_step(estimator, state, first, seed).map(Some);
    }
    let mut grads = GradientsParams::new();
    let mut losses = Vec::with_capacity(passes);
    losses.push(backward_pass(
        estimator, state, first, seed, passes, &mut grads,
    )?);
    for pass in 1..passes {
        let Some(batch) = input.next_batch().transpose()? else {
            return Ok(None);
        };
        let seed = step_seed(seed, pass as u64);
        losses.push(backward_pass(
            estimator, state, &batch, seed, passes, &mut grads,
        )?);
    }
    Ok(Some(LocalStep {
        grads,
        loss: StepLoss::mean(losses),
    }))
}

/// Runs the forward and backward pass of `batch` on the loss weighed as the estimator's
/// reduction says among the update's `passes` batches and its replicas (divided by
/// `passes` for a mean), times the loss scale, adding its gradients to `grads`; returns the
/// loss as the update reports it.
fn backward_pass<B: AutodiffBackend, E: Estimator>(
    estimator: &E,
    state: &State<B, E>,
    batch: &E::DeviceBatch<B>,
    seed: u64,
    passes: usize,
    grads: &mut GradientsParams,
) -> Result<StepLoss> {
    let (model, device) = (&state.model, &state.device);
    let loss = with_seed::<B, _>(device, seed, || estimator.loss::<B>(model, batch, device))?;
    let (reduction, replicas) = (estimator.loss_reduction(), state.sync_replicas);
    let reported = reduction.reported_factor(passes, replicas);
    let value = loss.clone().inner();
    let value = if reported == 1.0 {
        value
    } else {
        value.mul_scalar(reported)
    };
    let factor =
        state.loss_scale_factor().unwrap_or(1.0) * reduction.gradient_factor(passes, replicas);
    // Left alone at 1, so that one pass without a loss scale computes what it always has.
    let loss = if factor == 1.0 {
        loss
    } else {
        loss.mul_scalar(factor)
    };
    accumulate_gradients(model, &mut loss.backward(), grads);
    Ok(StepLoss::OnDevice(Box::new(move || {
        value.into_scalar().elem()
    })))
}
