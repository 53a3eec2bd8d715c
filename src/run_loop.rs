//! The run loop: training — one loop for every strategy, whose differences sit behind
//! `StepSync` — evaluation and prediction over a dataset.

mod chief;
mod device_input;
mod evaluate;
mod histograms;
mod input;
mod local_step;
mod loss_readout;
mod mirrored;
mod peeked;
mod predict;
mod progress;
mod step_sync;
mod termination;
mod thread_trial;
mod train;
mod train_loop;
mod train_state;
mod training_replica;
mod worker_positions;

pub(crate) use evaluate::evaluate;
pub(crate) use predict::predict;
pub(crate) use train::train;
#[cfg(test)]
mod tests;
