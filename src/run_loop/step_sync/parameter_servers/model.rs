//! The model's side of the ps tasks: the chief's state (or its latest checkpoint) put on
//! them as values, and their values and optimizer state gathered back into the state and a
//! checkpoint.

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use datasets::Position;

use super::super::Restored;
use super::PsSync;
use crate::checkpoint::{contents, Checkpoint};
use crate::distribute::ps::{Initial, Placement};
use crate::error::{Error, Result};
use crate::run_loop::train_state::TrainState;
use crate::state::{load_values, parameter_values};

/// Checkpoint metadata key of the placement.
pub const PLACEMENT_KEY: &str = "placement";

impl PsSync {
    /// Chief: the state restored from the latest checkpoint, when there is one.
    pub(super) fn restore_latest<B, M>(
        &self,
        state: TrainState<B, M>,
    ) -> Result<(TrainState<B, M>, Option<Restored>)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        Ok(match self.manager.latest()? {
            Some((source, checkpoint)) => {
                let state = state.restore(&checkpoint, &source)?;
                (state, Some(Restored { source, checkpoint }))
            }
            None => (state, None),
        })
    }

    /// Chief: ps `which` lost its variables (it restarted). The latest checkpoint goes back
    /// on every ps — the others have moved on since, and all must agree — as TF's chief
    /// does when it recreates its session.
    pub(super) fn reinitialise<B, M>(
        &mut self,
        state: TrainState<B, M>,
        which: usize,
    ) -> Result<TrainState<B, M>>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        tracing::warn!(
            "ps:{which} lost its variables (restarted?): putting the latest checkpoint back on \
             every ps task"
        );
        let (state, restored) = self.restore_latest(state)?;
        let recorded = match restored {
            Some(Restored { source, checkpoint }) => {
                let step = state.global_step;
                let source = source.display();
                tracing::info!("restored {source} (global_step {step}) onto the ps tasks");
                recorded_placement(&checkpoint)
            }
            None => {
                tracing::warn!(
                    "no checkpoint yet: the ps tasks restart from the chief's last pulled \
                     values with fresh optimizer state"
                );
                self.session.placement().cloned()
            }
        };
        self.initialise(&state, recorded)?;
        Ok(state)
    }

    /// Chief: puts the state's values and optimizer state on the ps tasks, placed as
    /// `recorded` says when it fits, anew otherwise.
    pub(super) fn initialise<B, M>(
        &mut self,
        state: &TrainState<B, M>,
        recorded: Option<Placement>,
    ) -> Result<()>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let initial = Initial {
            values: parameter_values(&state.model),
            optimizer: state.optimizer.spec(),
            global_step: state.global_step,
            last_step: self.last_step,
            recorded,
        };
        self.session
            .initialise(initial, |owned| state.optimizer.state_bytes_of(owned))
    }

    /// Chief: every ps's values and optimizer state as a checkpoint, with the input at
    /// `position`; the state then holds them too, at the ps tasks' step (which other
    /// workers' pushes may have moved past this task's).
    pub(super) fn checkpoint<B, M>(
        &mut self,
        mut state: TrainState<B, M>,
        position: Option<Position>,
    ) -> Result<(TrainState<B, M>, Checkpoint)>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let mut gathered = self.session.gather()?;
        for (ps, bytes) in gathered.optimizer_states.iter().enumerate() {
            match ps {
                0 => state.optimizer.load_state_bytes(bytes, &state.device),
                _ => state.optimizer.merge_state_bytes(bytes, &state.device),
            }?;
        }
        state.model = load_values(state.model, &mut gathered.values)?;
        state.global_step = gathered.step;
        let mut checkpoint =
            contents::snapshot(&state.model, &state.optimizer, gathered.step, position)?;
        checkpoint.meta[PLACEMENT_KEY] = serde_json::to_value(&gathered.placement)
            .map_err(|e| Error::Config(format!("cannot record the placement: {e}")))?;
        Ok((state, checkpoint))
    }

    /// Chief: the ps tasks' steps parted; their values go back on every ps at `lowest`.
    pub(super) fn realign<B, M>(
        &mut self,
        state: TrainState<B, M>,
        lowest: u64,
    ) -> Result<TrainState<B, M>>
    where
        B: AutodiffBackend,
        M: Module<B>,
    {
        let (mut state, _) = self.checkpoint(state, None)?;
        state.global_step = lowest;
        let placement = self.session.placement().cloned();
        self.initialise(&state, placement)?;
        Ok(state)
    }
}

/// The placement a checkpoint recorded, if any.
pub(super) fn recorded_placement(checkpoint: &Checkpoint) -> Option<Placement> {
    checkpoint
        .meta
        .get(PLACEMENT_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}
