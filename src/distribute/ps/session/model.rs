//! The session on a training task's model: the chief's model and optimizer state put on
//! the ps tasks and gathered back (into the model, or into a checkpoint that records the
//! placement), a step's gradients pushed, and what goes back on the ps tasks after a
//! restart or when their steps parted. The run loop keeps only the loop: which of these a
//! step calls.

use std::path::Path;
use std::sync::Arc;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::super::worker::{PullAnswer, PushAnswer};
use super::super::{Partitions, Placement};
use super::{Initial, PsSession};
use crate::checkpoint::{contents, Checkpoint, CheckpointManager};
use crate::error::Result;
use crate::optimizer::{gradient_values, Optimizer};
use crate::state::{load_values, parameter_shapes, parameter_values, parameter_values_where};

/// A training task's state as a [`PsSession`] reads and writes it (the run loop's): a
/// model, rebuilt by value as values load into it, its optimizer and the global step.
pub(crate) trait ModelState<B: AutodiffBackend>: Sized {
    /// The model.
    type Model: Module<B>;

    /// The model, the optimizer and the global step.
    fn parts(&self) -> (&Self::Model, &Optimizer<B>, u64);

    /// The state at global step `step`.
    fn at_step(self, step: u64) -> Self;

    /// The state restored from `checkpoint`, read from `source`.
    fn restore(self, checkpoint: &Checkpoint, source: &Path) -> Result<Self>;

    /// The state with the model `rebuild` makes of it, given the optimizer (whose state it
    /// may replace) and the device; with what else `rebuild` returns.
    fn rebuilt<T>(
        self,
        rebuild: impl FnOnce(Self::Model, &mut Optimizer<B>, &B::Device) -> Result<(Self::Model, T)>,
    ) -> Result<(Self, T)>;
}

impl PsSession {
    /// The blocks of `model`'s variables: the same for every model of a run.
    fn partitions_of<B: AutodiffBackend, M: Module<B>>(&mut self, model: &M) -> Arc<Partitions> {
        let (partitioner, num_ps) = (self.partitioner, self.replica.num_ps());
        let partitions = self.partitions.get_or_insert_with(|| {
            Arc::new(Partitions::new(
                partitioner,
                &parameter_shapes(model),
                num_ps,
            ))
        });
        Arc::clone(partitions)
    }

    /// Chief: puts `state`'s values and optimizer state on the ps tasks, to stop at the
    /// [last step](Self::set_last_step). They keep the placement the checkpoint `state` was
    /// `restored` from recorded, when it fits; without a checkpoint, the one the ps tasks
    /// hold now (none before the first initialisation: they are placed anew).
    pub fn initialise_model<B, S>(&mut self, state: &S, restored: Option<&Checkpoint>) -> Result<()>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        let (model, optimizer, global_step) = state.parts();
        let partitions = self.partitions_of(model);
        let recorded = match restored {
            Some(checkpoint) => Placement::recorded_in(checkpoint),
            None => self.placement().cloned(),
        };
        let initial = Initial {
            values: partitions.cut_shaped(parameter_values(model)),
            optimizer: optimizer.spec(),
            global_step,
            last_step: self.last_step,
            recorded,
        };
        self.initialise(initial, |owned| {
            optimizer.state_bytes_in_blocks(owned, |path| partitions.blocks_of(path))
        })
    }

    /// Chief: ps `which` lost its variables (it restarted). The latest checkpoint of
    /// `checkpoints` goes back on every ps, and into `state` — the others have moved on
    /// since, and all must agree — as TF's chief does when it recreates its session; with
    /// no checkpoint yet, the chief's last pulled values go back, with fresh optimizer
    /// state.
    pub fn reinitialise_model<B, S>(
        &mut self,
        which: usize,
        state: S,
        checkpoints: &CheckpointManager,
    ) -> Result<S>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        tracing::warn!(
            "ps:{which} lost its variables (restarted?): putting the latest checkpoint back on \
             every ps task"
        );
        let Some((source, checkpoint)) = checkpoints.latest()? else {
            tracing::warn!(
                "no checkpoint yet: the ps tasks restart from the chief's last pulled values \
                 with fresh optimizer state"
            );
            self.initialise_model(&state, None)?;
            return Ok(state);
        };
        let state = state.restore(&checkpoint, &source)?;
        let (source, step) = (source.display(), checkpoint.global_step);
        tracing::info!("restored {source} (global_step {step}) onto the ps tasks");
        self.initialise_model(&state, Some(&checkpoint))?;
        Ok(state)
    }

    /// The ps tasks' values pulled into `state`, at their global step (which other
    /// workers' pushes may have moved): only those changed since the last pull cross the
    /// wire and are loaded. `None` when the job is over. The chief puts the
    /// latest checkpoint of `checkpoints` back on ps tasks that lost their variables
    /// meanwhile ([`reinitialise_model`](Self::reinitialise_model)) and pulls again.
    pub fn pull_model<B, S>(
        &mut self,
        mut state: S,
        checkpoints: &CheckpointManager,
    ) -> Result<(S, Option<u64>)>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        loop {
            match self.pull()? {
                PullAnswer::Values { step, values } => {
                    let partitions = self.partitions_of(state.parts().0);
                    let (state, ()) = state.rebuilt(|model, _, _| {
                        let mut values = partitions.join(values, |partial| {
                            parameter_values_where(&model, |path| partial.contains(path))
                                .into_iter()
                                .map(|(path, (_, values))| (path, values))
                                .collect()
                        })?;
                        Ok((load_values(model, &mut values)?, ()))
                    })?;
                    self.assigned.before_step(state.parts().0);
                    return Ok((state.at_step(step), Some(step)));
                }
                PullAnswer::Done => return Ok((state, None)),
                PullAnswer::Reinitialise(which) => {
                    state = self.reinitialise_model(which, state, checkpoints)?;
                }
                PullAnswer::Again => {}
            }
        }
    }

    /// Pushes a step's `grads` of `state`'s model, each regularised and clipped on its own
    /// as its optimizer says before the ps tasks apply it; the running statistics the
    /// forward pass moved travel along (frozen values do not). The state comes back at the
    /// global step the answer names.
    ///
    /// Where the chief has to put values back on the ps tasks, it does, and answers
    /// [`PushAnswer::Dropped`] with the step they are back at (training goes on from
    /// there): told done by a ps while the ps tasks' steps parted short of the last step
    /// ([`short_of`](Self::short_of)), their values at the lowest step; told that a ps lost
    /// its variables, the latest checkpoint of `checkpoints`
    /// ([`reinitialise_model`](Self::reinitialise_model)).
    pub fn push_model<B, S>(
        &mut self,
        state: S,
        grads: GradientsParams,
        checkpoints: &CheckpointManager,
    ) -> Result<(S, PushAnswer)>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        let partitions = self.partitions_of(state.parts().0);
        let (model, optimizer, _) = state.parts();
        let spec = optimizer.spec();
        let grads = spec.regularization.apply(model, grads);
        let grads = spec.clipping.apply(model, grads);
        let gradients = partitions.cut(gradient_values(model, &grads, false))?;
        let assign = partitions.cut(self.assigned.after_step(model))?;
        let answer = self.push(assign, gradients)?;
        let step = match answer {
            PushAnswer::Applied(step) | PushAnswer::Dropped(step) => step,
            PushAnswer::Reinitialise(which) => {
                let state = self.reinitialise_model(which, state, checkpoints)?;
                let (_, _, step) = state.parts();
                return Ok((state, PushAnswer::Dropped(step)));
            }
            PushAnswer::Done(step) => match self.short_of(self.last_step)? {
                None => step,
                Some(lowest) => {
                    let (state, _) = self.gather_into(state)?;
                    let state = state.at_step(lowest);
                    self.initialise_model(&state, None)?;
                    return Ok((state, PushAnswer::Dropped(lowest)));
                }
            },
        };
        Ok((state.at_step(step), answer))
    }

    /// Chief: every ps's values loaded into `state`'s model and their optimizer state into
    /// its optimizer (ps 0's loaded, the others' merged in: each holds its own variables'),
    /// at the ps tasks' step — which other workers' pushes may have moved past this task's.
    pub fn gather_into<B, S>(&mut self, state: S) -> Result<(S, Placement)>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        let partitions = self.partitions_of(state.parts().0);
        let gathered = self.gather()?;
        // Every block is gathered: one missing is an error, not one to fill from the model.
        let mut values = partitions.join(gathered.values, |_| Default::default())?;
        let (state, ()) = state.rebuilt(|model, optimizer, device| {
            for (ps, bytes) in gathered.optimizer_states.iter().enumerate() {
                match ps {
                    0 => optimizer.load_state_bytes(bytes, device),
                    _ => optimizer.merge_state_bytes(bytes, device),
                }?;
            }
            for (path, blocks) in partitions.blocks() {
                optimizer.join_blocks(&path, &blocks)?;
            }
            Ok((load_values(model, &mut values)?, ()))
        })?;
        Ok((state.at_step(gathered.step), gathered.placement))
    }

    /// Chief: [`gather_into`](Self::gather_into), and a checkpoint of the result with the
    /// input at `position` and the ps tasks' placement.
    pub fn gather_checkpoint<B, S>(
        &mut self,
        state: S,
        position: Option<Position>,
    ) -> Result<(S, Checkpoint)>
    where
        B: AutodiffBackend,
        S: ModelState<B>,
    {
        let (state, placement) = self.gather_into(state)?;
        let (model, optimizer, step) = state.parts();
        let mut checkpoint = contents::snapshot(model, optimizer, step, position)?;
        placement.record_in(&mut checkpoint)?;
        Ok((state, checkpoint))
    }
}

#[cfg(test)]
mod tests;
