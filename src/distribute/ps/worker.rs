//! A training task's side of the ps protocol, without I/O: what its pushes say (each ps's
//! step and initialisation as its last pull showed them, every gradient sent to the ps that
//! holds its variable) and what the ps tasks' replies mean. The run loop drives it over a
//! `PsClient`; tests feed it replies directly.

use std::collections::BTreeMap;
use std::time::Duration;

use super::client::PsError;
use super::proto::{PullReply, PushOutcome, PushReply, PushRequest};
use super::wire::{f32_values, variable};
use crate::error::Error;

/// What the ps tasks' replies to a pull say.
#[derive(Debug, PartialEq)]
pub enum PullAnswer {
    /// Every variable's values by path, at ps 0's global step.
    Values {
        /// The global step.
        step: u64,
        /// The values by parameter path.
        values: BTreeMap<String, Vec<f32>>,
    },
    /// The job is over.
    Done,
    /// This ps lost its variables (it restarted): the chief re-initialises every ps.
    NotInitialised(usize),
    /// The ps tasks hold different initialisations (these generations): the chief is
    /// initialising them, and a push now would be applied by some and refused by others.
    Mixed(Vec<u64>),
}

/// What the ps tasks did with a push.
#[derive(Debug, PartialEq)]
pub enum PushAnswer {
    /// Applied (or aggregated into a synchronous update); the global step after it.
    Applied(u64),
    /// Not applied (stale, re-initialised meanwhile, or a ps unreachable); the global step.
    Dropped(u64),
    /// The job reached its last step or finished; the global step.
    Done(u64),
    /// This ps lost its variables.
    NotInitialised(usize),
    /// A synchronous update gave up waiting for these training tasks (ranks).
    TasksMissing {
        /// The ranks that pushed nothing for the step.
        ranks: Vec<u32>,
        /// What the ps said.
        message: String,
    },
}

/// One training task's protocol state with the ps tasks; see the [module docs](self).
#[derive(Debug)]
pub struct PsWorker {
    worker: u32,
    /// How long a synchronous push waits on a ps for the other tasks' gradients.
    push_wait: Duration,
    /// The ps of every variable, as pulls show it.
    owners: BTreeMap<String, usize>,
    /// Each ps's step and initialisation at the last pull.
    steps: Vec<u64>,
    generations: Vec<u64>,
    /// The values the last push brought back, for the next step.
    prefetched: Option<Vec<PullReply>>,
}

impl PsWorker {
    /// Training task `worker` with `num_ps` ps tasks, whose synchronous pushes wait up to
    /// `push_wait`.
    pub fn new(worker: u32, num_ps: usize, push_wait: Duration) -> Self {
        Self {
            worker,
            push_wait,
            owners: BTreeMap::new(),
            steps: vec![0; num_ps],
            generations: vec![0; num_ps],
            prefetched: None,
        }
    }

    /// The replies of a pull the last push made unnecessary (it brought the values after
    /// its update back), once.
    pub fn take_prefetched(&mut self) -> Option<Vec<PullReply>> {
        self.prefetched.take()
    }

    /// The chief put new values on the ps tasks: those a push brought back are stale.
    pub fn forget_prefetched(&mut self) {
        self.prefetched = None;
    }

    /// What a pull's `replies` say; values are only taken when every ps holds one
    /// initialisation, and then become what the next push refers to.
    pub fn on_pull(
        &mut self,
        replies: Result<Vec<PullReply>, PsError>,
    ) -> Result<PullAnswer, Error> {
        let replies = match replies {
            Ok(replies) => replies,
            Err(PsError::NotInitialised { ps }) => return Ok(PullAnswer::NotInitialised(ps)),
            Err(error) => return Err(error.into()),
        };
        if replies.iter().any(|r| r.done) {
            return Ok(PullAnswer::Done);
        }
        if !replies
            .windows(2)
            .all(|w| w[0].generation == w[1].generation)
        {
            return Ok(PullAnswer::Mixed(
                replies.iter().map(|r| r.generation).collect(),
            ));
        }
        let mut values = BTreeMap::new();
        for (ps, reply) in replies.iter().enumerate() {
            self.steps[ps] = reply.step;
            self.generations[ps] = reply.generation;
            for v in &reply.variables {
                let decoded = f32_values(v).map_err(|e| Error::Config(format!("ps:{ps}: {e}")))?;
                self.owners.insert(v.path.clone(), ps);
                values.insert(v.path.clone(), decoded);
            }
        }
        let step = replies.first().map_or(0, |r| r.step);
        Ok(PullAnswer::Values { step, values })
    }

    /// One push per ps: the `gradients` of the variables it holds, computed from the values
    /// of the last pull, and the `assign`ed values (running statistics) of its variables. A
    /// gradient of a variable no ps holds is an error (another model?).
    pub fn push_requests(
        &self,
        assign: impl IntoIterator<Item = (String, Vec<f32>)>,
        gradients: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Result<Vec<PushRequest>, Error> {
        let mut requests: Vec<PushRequest> = (0..self.steps.len())
            .map(|ps| PushRequest {
                worker: self.worker,
                step: self.steps[ps],
                generation: self.generations[ps],
                gradients: Vec::new(),
                wait_ms: self.push_wait.as_millis() as u64,
                pull: true,
                assign: Vec::new(),
            })
            .collect();
        for (path, values) in assign {
            if let Some(&ps) = self.owners.get(&path) {
                requests[ps].assign.push(variable(&path, &[], &values));
            }
        }
        for (path, grad) in gradients {
            let ps = *self.owners.get(&path).ok_or_else(|| {
                Error::Config(format!(
                    "parameter '{path}' is on no ps task (another model?)"
                ))
            })?;
            requests[ps].gradients.push(variable(&path, &[], &grad));
        }
        Ok(requests)
    }

    /// What a push's `replies` say. A push that did not reach a ps is not sent again (it
    /// may have arrived: a doubled update would corrupt); the next pull retries instead.
    pub fn on_push(
        &mut self,
        replies: Result<Vec<PushReply>, PsError>,
    ) -> Result<PushAnswer, PsError> {
        let replies = match replies {
            Ok(replies) => replies,
            Err(PsError::NotInitialised { ps }) => return Ok(PushAnswer::NotInitialised(ps)),
            Err(PsError::Unreachable { ps, message }) => {
                tracing::warn!("push to ps:{ps} failed ({message}); pulling again");
                return Ok(PushAnswer::Dropped(self.steps[0]));
            }
            Err(PsError::TasksMissing { ranks, message }) => {
                return Ok(PushAnswer::TasksMissing { ranks, message })
            }
            Err(error) => return Err(error),
        };
        let step = replies.first().map_or(0, |r| r.step);
        // An outcome this build does not know counts as not applied.
        let outcome =
            |r: &PushReply| PushOutcome::try_from(r.outcome).unwrap_or(PushOutcome::Stale);
        if replies.iter().any(|r| outcome(r) == PushOutcome::Done) {
            return Ok(PushAnswer::Done(step));
        }
        let applied = replies
            .first()
            .is_some_and(|r| outcome(r) == PushOutcome::Applied);
        // Every ps answered with its values after the update: the next step's pull.
        self.prefetched = Some(
            replies
                .into_iter()
                .map(|r| PullReply {
                    step: r.step,
                    generation: r.generation,
                    done: false,
                    variables: r.variables,
                })
                .collect(),
        );
        Ok(if applied {
            PushAnswer::Applied(step)
        } else {
            PushAnswer::Dropped(step)
        })
    }
}

#[cfg(test)]
mod tests;
