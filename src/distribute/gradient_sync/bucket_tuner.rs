//! The fusion buckets' size chosen by trial, as Horovod's autotune chooses its fusion
//! threshold: after some warm-up steps, the candidate sizes take turns, one step each, for
//! some rounds; every rank times its synchronisation, and the ranks vote in the next step's
//! all-reduce. Taking turns, rather than one candidate's steps after another's, spreads
//! what still drifts after the warm-up (buffers kept, the kernel's socket buffers growing,
//! the machine's speed) over all of them.
//!
//! The vote rides the step entry, which every rank receives averaged to the same bits, so
//! every rank picks the same size (the lowest mean, the smaller size on a tie) with no
//! exchange of its own. A step called off (a rank out of input) carries the vote again in
//! the next.

use std::time::Instant;

use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;

use super::{GradientAverager, LocalStep};
use crate::distribute::{Result, Transport};

/// Bucket sizes tried, in bytes: from latency-bound small buckets to one as large as the
/// largest weight measured (a 4096 × 4096 layer).
const CANDIDATES: [usize; 4] = [1 << 20, 4 << 20, 16 << 20, 64 << 20];

/// Steps left out before the trials: the first steps allocate and connect.
const WARMUP_STEPS: usize = 10;

/// Steps each candidate runs for, one round of turns each.
const STEPS_PER_CANDIDATE: usize = 10;

/// Where the trials stand.
#[derive(Debug, Clone)]
pub(super) struct BucketTuner {
    candidates: Vec<usize>,
    warmup: usize,
    per_candidate: usize,
    /// Steps finished.
    steps: usize,
    /// Synchronisation seconds per candidate, summed over its steps.
    seconds: Vec<f64>,
    chosen: Option<usize>,
}

/// What the next step does.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TunedStep {
    pub(super) bucket_bytes: usize,
    /// This rank's mean synchronisation per candidate (ms), to ride the step entry, when
    /// this step decides.
    pub(super) vote: Option<Vec<f32>>,
}

impl BucketTuner {
    /// Trials of `candidates` (at least one), `per_candidate` steps each, after `warmup`.
    pub(super) fn new(candidates: &[usize], warmup: usize, per_candidate: usize) -> Self {
        assert!(!candidates.is_empty(), "no bucket size to try");
        Self {
            candidates: candidates.to_vec(),
            warmup,
            per_candidate: per_candidate.max(1),
            steps: 0,
            seconds: vec![0.0; candidates.len()],
            chosen: None,
        }
    }

    /// The trials Horovod's users would expect: [`CANDIDATES`], [`STEPS_PER_CANDIDATE`]
    /// steps each after [`WARMUP_STEPS`].
    pub(super) fn standard() -> Self {
        Self::new(&CANDIDATES, WARMUP_STEPS, STEPS_PER_CANDIDATE)
    }

    fn trials_end(&self) -> usize {
        self.warmup + self.candidates.len() * self.per_candidate
    }

    /// The candidate a step runs with during the trials (the first during warm-up, and
    /// after the trials until the vote is in): each in turn.
    fn trial(&self) -> Option<usize> {
        let trial = self.steps.checked_sub(self.warmup)?;
        (self.steps < self.trials_end()).then(|| trial % self.candidates.len())
    }

    /// The next step's bucket size, and this rank's vote when the trials are over.
    pub(super) fn begin(&self) -> TunedStep {
        if let Some(bytes) = self.chosen {
            return TunedStep {
                bucket_bytes: bytes,
                vote: None,
            };
        }
        let bucket_bytes = self.candidates[self.trial().unwrap_or(0)];
        let vote = (self.steps >= self.trials_end()).then(|| {
            let per = self.per_candidate as f64;
            (self.seconds.iter())
                .map(|s| (s / per * 1e3) as f32)
                .collect()
        });
        TunedStep { bucket_bytes, vote }
    }

    /// Counts a finished step that synchronised for `seconds`.
    pub(super) fn end(&mut self, seconds: f64) {
        if let Some(trial) = self.trial().filter(|_| self.chosen.is_none()) {
            self.seconds[trial] += seconds;
        }
        self.steps += 1;
    }

    fn log_choice(&self, bytes: usize, votes: &[f32]) {
        let means: Vec<String> = (self.candidates.iter().zip(votes))
            .map(|(size, ms)| format!("{} KiB {ms:.2} ms", size >> 10))
            .collect();
        tracing::info!(
            "fusion buckets of {} KiB, chosen by trial (mean synchronisation per step: {})",
            bytes >> 10,
            means.join(", ")
        );
    }

    /// Takes the ranks' averaged `votes` (one per candidate): the candidate with the
    /// lowest, the smaller on a tie.
    pub(super) fn decide(&mut self, votes: &[f32]) -> usize {
        let best = (0..self.candidates.len())
            .min_by(|&a, &b| votes[a].total_cmp(&votes[b]))
            .unwrap_or(0);
        let bytes = self.candidates[best];
        self.chosen = Some(bytes);
        bytes
    }
}

impl GradientAverager {
    /// [`average_timed`](GradientAverager::average_timed), with the bucket size of this
    /// step's trial when the size is being chosen, this rank's vote riding along once the
    /// trials are over, and the size the ranks chose taken from the averaged votes.
    pub(super) fn average_tuned<B: AutodiffBackend, M: Module<B>, T: Transport + ?Sized>(
        &mut self,
        model: &M,
        local: Option<LocalStep>,
        mut along: Vec<f32>,
        transport: &mut T,
        started: Instant,
    ) -> Result<Option<(LocalStep, Vec<f32>)>> {
        let Some(mut tuner) = self.tuner.take() else {
            return self.average_timed(model, local, along, transport, started);
        };
        let tuned = tuner.begin();
        if tuned.bucket_bytes != self.bucket_bytes {
            self.bucket_bytes = tuned.bucket_bytes;
            self.work = [None, None];
        }
        let own = along.len();
        along.extend(tuned.vote.iter().flatten());
        let averaged = self.average_timed(model, local, along, transport, started);
        let averaged = averaged.map(|averaged| {
            averaged.map(|(step, mut along)| {
                let votes = along.split_off(own);
                if tuned.vote.is_some() {
                    let bytes = tuner.decide(&votes);
                    if transport.rank() == 0 {
                        tuner.log_choice(bytes, &votes);
                    }
                }
                (step, along)
            })
        });
        tuner.end(started.elapsed().as_secs_f64());
        self.tuner = Some(tuner);
        averaged
    }
}

#[cfg(test)]
mod tests;
