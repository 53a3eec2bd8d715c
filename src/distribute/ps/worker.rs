//! A training task's side of the ps protocol, without I/O: what its pulls ask (how long a
//! ps may hold them, which initialisation they need, which values the task holds already),
//! what its pushes say (each ps's step and initialisation as its last pull showed them,
//! every gradient sent to the ps that holds its variable) and what the ps tasks' replies
//! mean — for the chief, which re-initialises a ps that lost its variables, and for the
//! other tasks, which wait for it. `PsSession` carries it out over a `PsClient`; tests feed
//! it replies directly.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::client::PsFault;
use super::messages::{Held, Pull, Pulled, Push, PushOutcome, Pushed};
use super::shard::CHIEF_RANK;
use crate::error::Error;

/// What the ps tasks' replies to a pull say.
#[derive(Debug, PartialEq)]
pub enum PullAnswer {
    /// The values by path at ps 0's global step of every variable changed since the
    /// pull before (all of them at first, or after a new initialisation).
    Values {
        /// The global step.
        step: u64,
        /// The values by parameter path.
        values: BTreeMap<String, Vec<f32>>,
    },
    /// The job is over.
    Done,
    /// The chief: this ps lost its variables (it restarted); re-initialise every ps.
    Reinitialise(usize),
    /// Pull again ([`PsWorker::pull_request`]): the ps tasks hold different
    /// initialisations (the chief is between two of them), or a ps waits for the chief to
    /// re-initialise it.
    Again,
}

/// What the ps tasks did with a push.
#[derive(Debug, PartialEq)]
pub enum PushAnswer {
    /// Applied (or aggregated into a synchronous update); the global step after it.
    Applied(u64),
    /// Not applied (stale, re-initialised meanwhile, or a ps unreachable or waiting for the
    /// chief); the global step.
    Dropped(u64),
    /// The job reached its last step or finished; the global step.
    Done(u64),
    /// The chief: this ps lost its variables; re-initialise every ps.
    Reinitialise(usize),
}

/// Pulls found the ps tasks on different initialisations.
#[derive(Debug, Clone, Copy)]
struct Mixed {
    /// The newest initialisation seen: the one the chief is putting on every ps.
    newest: u64,
    since: Instant,
}

/// One training task's protocol state with the ps tasks; see the [module docs](self).
#[derive(Debug)]
pub struct PsWorker {
    worker: u32,
    /// The training tasks' names, by rank (errors name them).
    names: Vec<String>,
    /// How long a synchronous push waits on a ps for the other tasks' gradients, and how
    /// long the ps tasks may disagree on their initialisation.
    peer_timeout: Duration,
    /// How long a pull waits for the chief's (re-)initialisation.
    init_wait: Duration,
    /// The ps of every variable, as pulls show it.
    owners: BTreeMap<String, usize>,
    /// Each ps's step and initialisation at the last pull.
    steps: Vec<u64>,
    generations: Vec<u64>,
    /// Each ps's version of the values the pulls so far brought: the next one asks for what
    /// changed since.
    versions: Vec<Option<u64>>,
    /// The values the last push brought back, for the next step.
    prefetched: Option<Vec<Pulled>>,
    mixed: Option<Mixed>,
}

impl PsWorker {
    /// Training task `worker` of the tasks `names` (rank order, the chief first), with
    /// `num_ps` ps tasks; `peer_timeout` bounds every wait once training runs, a first pull
    /// waits up to `startup_timeout` for the chief.
    pub fn new(
        worker: u32,
        names: Vec<String>,
        num_ps: usize,
        peer_timeout: Duration,
        startup_timeout: Duration,
    ) -> Self {
        // The chief initialises the ps tasks itself: waiting for that would wait for nobody.
        let init_wait = if worker == CHIEF_RANK {
            Duration::ZERO
        } else {
            startup_timeout
        };
        Self {
            worker,
            names,
            peer_timeout,
            init_wait,
            owners: BTreeMap::new(),
            steps: vec![0; num_ps],
            generations: vec![0; num_ps],
            versions: vec![None; num_ps],
            prefetched: None,
            mixed: None,
        }
    }

    /// Whether this task initialises the ps tasks.
    pub fn is_chief(&self) -> bool {
        self.worker == CHIEF_RANK
    }

    /// The task name of training task `rank` (`worker:1`), or "rank N".
    pub fn name(&self, rank: usize) -> String {
        self.names
            .get(rank)
            .cloned()
            .unwrap_or_else(|| format!("rank {rank}"))
    }

    /// The replies of a pull the last push made unnecessary (it brought the values after
    /// its update back), once.
    pub fn take_prefetched(&mut self) -> Option<Vec<Pulled>> {
        self.prefetched.take()
    }

    /// The chief put new values on the ps tasks: those a push brought back are stale.
    pub fn forget_prefetched(&mut self) {
        self.prefetched = None;
    }

    /// The pull to send to each ps at `now`, asking for the values changed since those the
    /// task holds. After the ps tasks were found on different initialisations it asks for
    /// the newest, which each ps holds the pull for: the task is woken when the chief
    /// reaches it, within what is left of the peer timeout.
    pub fn pull_request(&self, now: Instant) -> Vec<Pull> {
        let (wait, min_generation) = match self.mixed {
            Some(mixed) => (
                (mixed.since + self.peer_timeout).saturating_duration_since(now),
                Some(mixed.newest),
            ),
            None => (self.init_wait, None),
        };
        (0..self.steps.len())
            .map(|ps| Pull {
                wait,
                min_generation,
                since: self.held(ps),
            })
            .collect()
    }

    /// What the task holds of ps `ps`'s values, once a pull brought them.
    fn held(&self, ps: usize) -> Option<Held> {
        self.versions[ps].map(|version| Held {
            generation: self.generations[ps],
            version,
        })
    }

    /// What a pull's `replies` (received at `now`) say; values are only taken when every
    /// ps holds one initialisation, and then become what the next push refers to.
    pub fn on_pull(
        &mut self,
        replies: Result<Vec<Pulled>, Error>,
        now: Instant,
    ) -> Result<PullAnswer, Error> {
        let replies = match replies {
            Ok(replies) => replies,
            Err(Error::Ps(PsFault::NotInitialised { ps })) => {
                // Every ps gets a new initialisation: the one the others held is moot.
                self.mixed = None;
                return Ok(match self.is_chief() {
                    true => PullAnswer::Reinitialise(ps),
                    false => PullAnswer::Again,
                });
            }
            Err(error) => return Err(error),
        };
        let mut values = Vec::with_capacity(replies.len());
        for reply in replies {
            match reply {
                Pulled::Done => return Ok(PullAnswer::Done),
                Pulled::Values {
                    step,
                    generation,
                    version,
                    variables,
                } => values.push((step, generation, version, variables)),
            }
        }
        let generations: Vec<u64> = values.iter().map(|(_, g, _, _)| *g).collect();
        if generations.windows(2).any(|w| w[0] != w[1]) {
            return self.mixed(generations, now).map(|()| PullAnswer::Again);
        }
        self.mixed = None;
        let step = values.first().map_or(0, |(step, _, _, _)| *step);
        let mut by_path = BTreeMap::new();
        for (ps, (step, generation, version, variables)) in values.into_iter().enumerate() {
            self.steps[ps] = step;
            self.generations[ps] = generation;
            self.versions[ps] = Some(version);
            for (path, values) in variables {
                self.owners.insert(path.clone(), ps);
                by_path.insert(path, values);
            }
        }
        if !self.is_chief() {
            // Once training runs, a restarting ps is waited for as long as a silent peer.
            self.init_wait = self.peer_timeout;
        }
        Ok(PullAnswer::Values {
            step,
            values: by_path,
        })
    }

    /// The ps tasks hold `generations`: wait for the newest, unless they have disagreed
    /// for the peer timeout already (the chief stopped half-way).
    fn mixed(&mut self, generations: Vec<u64>, now: Instant) -> Result<(), Error> {
        let newest = generations.iter().copied().max().unwrap_or(0);
        let mixed = match self.mixed {
            Some(before) => Mixed {
                newest: newest.max(before.newest),
                since: before.since,
            },
            None => Mixed { newest, since: now },
        };
        let waited = now.saturating_duration_since(mixed.since);
        if waited >= self.peer_timeout {
            return Err(Error::PeerLost {
                task: self.name(CHIEF_RANK as usize),
                message: format!(
                    "the ps tasks still hold different initialisations after {waited:.0?} \
                     (generations {generations:?}): the chief stopped while initialising them"
                ),
            });
        }
        self.mixed = Some(mixed);
        Ok(())
    }

    /// One push per ps: the `gradients` of the variables it holds, computed from the values
    /// of the last pull, and the `assign`ed values (running statistics) of its variables. A
    /// gradient of a variable no ps holds is an error (another model?).
    pub fn push_requests(
        &self,
        assign: impl IntoIterator<Item = (String, Vec<f32>)>,
        gradients: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Result<Vec<Push>, Error> {
        let mut pushes: Vec<Push> = (0..self.steps.len())
            .map(|ps| Push {
                worker: self.worker,
                step: self.steps[ps],
                generation: self.generations[ps],
                gradients: Vec::new(),
                assign: Vec::new(),
                wait: self.peer_timeout,
                pull: true,
                since: self.held(ps),
            })
            .collect();
        for (path, values) in assign {
            if let Some(&ps) = self.owners.get(&path) {
                pushes[ps].assign.push((path, values));
            }
        }
        for (path, grad) in gradients {
            let ps = *self.owners.get(&path).ok_or_else(|| {
                Error::Config(format!(
                    "parameter '{path}' is on no ps task (another model?)"
                ))
            })?;
            pushes[ps].gradients.push((path, grad));
        }
        Ok(pushes)
    }

    /// What a push's `replies` say. A push that did not reach a ps is not sent again (it
    /// may have arrived: a doubled update would corrupt); the next pull retries instead.
    pub fn on_push(&mut self, replies: Result<Vec<Pushed>, Error>) -> Result<PushAnswer, Error> {
        let replies = match replies {
            Ok(replies) => replies,
            Err(Error::Ps(PsFault::NotInitialised { ps })) if self.is_chief() => {
                return Ok(PushAnswer::Reinitialise(ps))
            }
            // The next pull waits for the chief's re-initialisation.
            Err(Error::Ps(PsFault::NotInitialised { .. })) => {
                return Ok(PushAnswer::Dropped(self.steps[0]))
            }
            Err(Error::Ps(PsFault::Unreachable { ps, message })) => {
                tracing::warn!("push to ps:{ps} failed ({message}); pulling again");
                return Ok(PushAnswer::Dropped(self.steps[0]));
            }
            Err(Error::Ps(PsFault::TasksMissing { ranks, message })) => {
                let names: Vec<String> = ranks.iter().map(|&r| self.name(r as usize)).collect();
                return Err(Error::PeerLost {
                    task: names.join(", "),
                    message,
                });
            }
            Err(error) => return Err(error),
        };
        let step = replies.first().map_or(0, |r| r.step);
        if replies.iter().any(|r| r.outcome == PushOutcome::Done) {
            return Ok(PushAnswer::Done(step));
        }
        let applied = replies
            .first()
            .is_some_and(|r| r.outcome == PushOutcome::Applied);
        // Every ps answered with its values after the update: the next step's pull.
        self.prefetched = Some(
            replies
                .into_iter()
                .map(|r| Pulled::Values {
                    step: r.step,
                    generation: r.generation,
                    version: r.version,
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
