//! Learning-rate schedules (TF's `tf.keras.optimizers.schedules`), a linear warm-up in front
//! of any of them, and Horovod's scaling by the number of synchronous replicas: the rate is
//! a function of the global step alone, so a resumed run continues it exactly.

use std::f64::consts::PI;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the learning rate decays with the global step (TF's schedules, same formulas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decay {
    /// The optimizer's learning rate at every step.
    #[default]
    Constant,
    /// `lr · decay_rate^(step / decay_steps)`, the exponent floored when `staircase`.
    ExponentialDecay {
        /// Steps per decay period.
        decay_steps: u64,
        /// Factor per period.
        decay_rate: f64,
        /// Decay in whole periods.
        #[serde(default)]
        staircase: bool,
    },
    /// `values[0]` up to and including step `boundaries[0]`, `values[1]` up to
    /// `boundaries[1]`, …, the last value after the last boundary (the optimizer's rate is
    /// not used).
    PiecewiseConstant {
        /// Increasing steps.
        boundaries: Vec<u64>,
        /// One more than the boundaries.
        values: Vec<f64>,
    },
    /// `(lr − end) · (1 − step / decay_steps)^power + end`; with `cycle` the period restarts
    /// (stretched to the next multiple of `decay_steps`), without it the rate stays at `end`.
    PolynomialDecay {
        /// Steps to reach `end_learning_rate`.
        decay_steps: u64,
        /// The final rate.
        end_learning_rate: f64,
        /// The polynomial's power (1: linear).
        #[serde(default = "one")]
        power: f64,
        /// Restart after `decay_steps`.
        #[serde(default)]
        cycle: bool,
    },
    /// `lr · ((1 − alpha) · ½(1 + cos(π · min(step, decay_steps) / decay_steps)) + alpha)`.
    CosineDecay {
        /// Steps of the half cosine.
        decay_steps: u64,
        /// The floor, as a fraction of the rate.
        #[serde(default)]
        alpha: f64,
    },
    /// Cosine decay with warm restarts (SGDR): periods of `first_decay_steps · t_mul^i`
    /// steps, the i-th starting at `m_mul^i` of the rate.
    CosineDecayRestarts {
        /// Steps of the first period.
        first_decay_steps: u64,
        /// Growth of each period's length.
        #[serde(default = "two")]
        t_mul: f64,
        /// Factor on each period's starting rate.
        #[serde(default = "one")]
        m_mul: f64,
        /// The floor, as a fraction of the rate.
        #[serde(default)]
        alpha: f64,
    },
}

fn one() -> f64 {
    1.0
}

fn two() -> f64 {
    2.0
}

/// The learning rate over training: a decay, a linear warm-up in front of it, and optionally
/// Horovod's scaling by the number of synchronous replicas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Schedule {
    /// How the rate decays after the warm-up.
    #[serde(default)]
    pub decay: Decay,
    /// Steps over which the rate rises linearly to the decay's starting rate; the decay
    /// then starts at step `warmup_steps` (as Keras' `CosineDecay` with `warmup_steps`).
    #[serde(default)]
    pub warmup_steps: u64,
    /// Multiply the rate by the number of replicas whose gradients each update averages
    /// (Horovod's recipe for a larger global batch); off by default.
    #[serde(default)]
    pub scale_by_sync_replicas: bool,
}

impl Schedule {
    /// The optimizer's rate at every step.
    pub fn is_constant(&self) -> bool {
        *self == Schedule::default()
    }

    /// A schedule that decays as `decay`.
    pub fn decay(decay: Decay) -> Self {
        Self {
            decay,
            ..Self::default()
        }
    }

    /// With a linear warm-up over `steps` steps in front.
    pub fn with_warmup_steps(mut self, steps: u64) -> Self {
        self.warmup_steps = steps;
        self
    }

    /// Scaled by the number of synchronous replicas (or not).
    pub fn with_scale_by_sync_replicas(mut self, scale: bool) -> Self {
        self.scale_by_sync_replicas = scale;
        self
    }

    /// Checks the parameters; errors name the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(format!("learning-rate schedule: {m}")));
        match &self.decay {
            Decay::Constant => Ok(()),
            Decay::ExponentialDecay { decay_steps: 0, .. }
            | Decay::PolynomialDecay { decay_steps: 0, .. }
            | Decay::CosineDecay { decay_steps: 0, .. } => {
                bad("decay_steps must be at least 1".into())
            }
            Decay::CosineDecayRestarts {
                first_decay_steps: 0,
                ..
            } => bad("first_decay_steps must be at least 1".into()),
            Decay::CosineDecayRestarts { t_mul, .. } if *t_mul <= 0.0 => {
                bad(format!("t_mul {t_mul} must be positive"))
            }
            Decay::PiecewiseConstant { boundaries, values } => {
                if values.len() != boundaries.len() + 1 {
                    return bad(format!(
                        "piecewise_constant needs one more value than boundaries, got {} \
                         boundaries and {} values",
                        boundaries.len(),
                        values.len()
                    ));
                }
                if boundaries.windows(2).any(|w| w[0] >= w[1]) {
                    return bad(format!("boundaries {boundaries:?} must increase"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The rate at `step` for an optimizer rate `base`, with `sync_replicas` replicas
    /// averaged per update.
    pub fn rate(&self, base: f64, step: u64, sync_replicas: usize) -> f64 {
        let scale = if self.scale_by_sync_replicas {
            sync_replicas.max(1) as f64
        } else {
            1.0
        };
        let rate = if step < self.warmup_steps {
            self.decay.rate(base, 0) * (step + 1) as f64 / self.warmup_steps as f64
        } else {
            self.decay.rate(base, step - self.warmup_steps)
        };
        rate * scale
    }
}

impl Decay {
    /// The decayed rate at `step` for a starting rate `base`.
    pub fn rate(&self, base: f64, step: u64) -> f64 {
        let t = step as f64;
        match self {
            Decay::Constant => base,
            Decay::ExponentialDecay {
                decay_steps,
                decay_rate,
                staircase,
            } => {
                let p = t / *decay_steps as f64;
                base * decay_rate.powf(if *staircase { p.floor() } else { p })
            }
            Decay::PiecewiseConstant { boundaries, values } => {
                let i = boundaries.iter().take_while(|&&b| step > b).count();
                values.get(i).copied().unwrap_or(base)
            }
            Decay::PolynomialDecay {
                decay_steps,
                end_learning_rate,
                power,
                cycle,
            } => {
                let mut steps = *decay_steps as f64;
                let mut t = t;
                if *cycle {
                    let periods = if t == 0.0 { 1.0 } else { (t / steps).ceil() };
                    steps *= periods;
                } else {
                    t = t.min(steps);
                }
                (base - end_learning_rate) * (1.0 - t / steps).powf(*power) + end_learning_rate
            }
            Decay::CosineDecay { decay_steps, alpha } => {
                let steps = *decay_steps as f64;
                let cosine = 0.5 * (1.0 + (PI * t.min(steps) / steps).cos());
                base * ((1.0 - alpha) * cosine + alpha)
            }
            Decay::CosineDecayRestarts {
                first_decay_steps,
                t_mul,
                m_mul,
                alpha,
            } => {
                let mut fraction = t / *first_decay_steps as f64;
                let restarts = if *t_mul == 1.0 {
                    let i = fraction.floor();
                    fraction -= i;
                    i
                } else {
                    let i = ((1.0 - fraction * (1.0 - t_mul)).ln() / t_mul.ln()).floor();
                    let done = (1.0 - t_mul.powf(i)) / (1.0 - t_mul);
                    fraction = (fraction - done) / t_mul.powf(i);
                    i
                };
                let cosine = 0.5 * m_mul.powf(restarts) * (1.0 + (PI * fraction).cos());
                base * ((1.0 - alpha) * cosine + alpha)
            }
        }
    }
}

#[cfg(test)]
mod tests;
