//! Which optimizer to train with, as plain serialisable data.

use serde::{Deserialize, Serialize};

use super::bounds::{check_each, non_negative};
use super::{Clipping, Regularization, Schedule};
use crate::error::{Error, Result};

/// The optimizer an estimator trains with: an update rule, its learning rate and what
/// every rule shares (schedule, clipping, regularisation), optionally with another rule
/// for one part of the model (TF's wide & deep: FTRL on the linear part, Adagrad on the
/// DNN).
///
/// In JSON the rule's fields sit next to the others:
/// `{"kind": "adam", "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizerSpec {
    /// The update rule and its hyper-parameters.
    #[serde(flatten)]
    pub algorithm: Algorithm,
    /// Step size (before the schedule).
    pub learning_rate: f64,
    /// How the rate changes with the global step (constant by default).
    #[serde(default, skip_serializing_if = "Schedule::is_constant")]
    pub schedule: Schedule,
    /// How gradients are clipped before the update (not by default).
    #[serde(default, skip_serializing_if = "Clipping::is_none")]
    pub clipping: Clipping,
    /// L1 / L2 penalties on the kernels (none by default).
    #[serde(default, skip_serializing_if = "Regularization::is_none")]
    pub regularization: Regularization,
    /// The parameters under one module trained by another rule (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<Box<PartOptimizer>>,
}

/// Another update rule for the parameters under one module of the model.
///
/// Its rate follows the same schedule: at each step it is `learning_rate` times the
/// schedule's rate over the main base rate. Clipping and regularisation are shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartOptimizer {
    /// The module path (`linear` holds `linear.weights`, `linear.bias`, …).
    pub module: String,
    /// The update rule and its hyper-parameters.
    #[serde(flatten)]
    pub algorithm: Algorithm,
    /// Step size (before the schedule).
    pub learning_rate: f64,
}

/// An update rule and its hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Algorithm {
    /// Adam (Kingma & Ba) as Keras' `Adam`.
    Adam {
        /// Decay of the first moment.
        beta_1: f32,
        /// Decay of the second moment.
        beta_2: f32,
        /// Numerical-stability term.
        epsilon: f32,
    },
    /// Adagrad as Keras' `Adagrad` (TF's default for DNN estimators).
    Adagrad {
        /// Numerical-stability term.
        epsilon: f32,
        /// Starting value of the squared-gradient accumulator (TF: 0.1).
        #[serde(default = "tf_initial_accumulator")]
        initial_accumulator_value: f64,
    },
    /// Plain stochastic gradient descent, optionally with momentum.
    Sgd {
        /// Momentum factor; 0 disables momentum.
        momentum: f64,
        /// Nesterov momentum (TF's `use_nesterov`).
        #[serde(default)]
        nesterov: bool,
    },
    /// RMSprop as Keras' `RMSprop`.
    Rmsprop {
        /// Decay of the squared-gradient average (TF: 0.9).
        rho: f64,
        /// Momentum; 0 for none.
        momentum: f64,
        /// Added under the square root (TF: 1e-7).
        epsilon: f64,
        /// Normalise by the gradient's estimated variance.
        centered: bool,
    },
    /// AdamW (Adam with decoupled weight decay) as Keras' `AdamW`.
    AdamW {
        /// Decay of the first moment.
        beta_1: f64,
        /// Decay of the second moment.
        beta_2: f64,
        /// Numerical-stability term.
        epsilon: f64,
        /// Decoupled weight decay (TF: 0.004).
        weight_decay: f64,
    },
    /// FTRL-Proximal (TF's `Ftrl`, the default of its canned linear models).
    Ftrl {
        /// Exponent of the accumulator in the per-coordinate rate (TF: −0.5).
        learning_rate_power: f64,
        /// Starting value of the squared-gradient accumulator (TF: 0.1).
        initial_accumulator_value: f64,
        /// L1 regularisation strength.
        l1: f64,
        /// L2 regularisation strength.
        l2: f64,
        /// L2 shrinkage applied to the gradient.
        l2_shrinkage: f64,
        /// TF's `beta`.
        beta: f64,
    },
}

fn tf_initial_accumulator() -> f64 {
    0.1
}

impl Algorithm {
    /// Short name used in checkpoints, so a checkpoint is never restored into another kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Algorithm::Adam { .. } => "adam",
            Algorithm::Adagrad { .. } => "adagrad",
            Algorithm::Sgd { .. } => "sgd",
            Algorithm::Rmsprop { .. } => "rmsprop",
            Algorithm::AdamW { .. } => "adamw",
            Algorithm::Ftrl { .. } => "ftrl",
        }
    }
}

impl OptimizerSpec {
    /// `algorithm` at `learning_rate`, constant, without clipping or penalties.
    pub fn new(algorithm: Algorithm, learning_rate: f64) -> Self {
        Self {
            algorithm,
            learning_rate,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
            part: None,
        }
    }

    /// Adam with `learning_rate` and TF's beta/epsilon defaults (0.9, 0.999, 1e-7).
    pub fn adam(learning_rate: f64) -> Self {
        let algorithm = Algorithm::Adam {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-7,
        };
        Self::new(algorithm, learning_rate)
    }

    /// Adagrad with `learning_rate` and TF's accumulator start 0.1 (TF's DNNClassifier
    /// default rate is 0.05).
    pub fn adagrad(learning_rate: f64) -> Self {
        let algorithm = Algorithm::Adagrad {
            epsilon: 1e-7,
            initial_accumulator_value: tf_initial_accumulator(),
        };
        Self::new(algorithm, learning_rate)
    }

    /// SGD with `learning_rate` and no momentum.
    pub fn sgd(learning_rate: f64) -> Self {
        Self::sgd_momentum(learning_rate, 0.0, false)
    }

    /// SGD with `momentum` (Nesterov's when `nesterov`), as TF's `SGD`.
    pub fn sgd_momentum(learning_rate: f64, momentum: f64, nesterov: bool) -> Self {
        Self::new(Algorithm::Sgd { momentum, nesterov }, learning_rate)
    }

    /// RMSprop with `learning_rate` and TF's defaults (rho 0.9, no momentum, epsilon
    /// 1e-7, not centered).
    pub fn rmsprop(learning_rate: f64) -> Self {
        let algorithm = Algorithm::Rmsprop {
            rho: 0.9,
            momentum: 0.0,
            epsilon: 1e-7,
            centered: false,
        };
        Self::new(algorithm, learning_rate)
    }

    /// AdamW with `learning_rate` and TF's defaults (weight decay 0.004, betas 0.9 /
    /// 0.999, epsilon 1e-7).
    pub fn adamw(learning_rate: f64) -> Self {
        let algorithm = Algorithm::AdamW {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-7,
            weight_decay: 0.004,
        };
        Self::new(algorithm, learning_rate)
    }

    /// FTRL with `learning_rate` and TF's defaults (power −0.5, accumulator 0.1, no
    /// regularisation).
    pub fn ftrl(learning_rate: f64) -> Self {
        let algorithm = Algorithm::Ftrl {
            learning_rate_power: -0.5,
            initial_accumulator_value: 0.1,
            l1: 0.0,
            l2: 0.0,
            l2_shrinkage: 0.0,
            beta: 0.0,
        };
        Self::new(algorithm, learning_rate)
    }

    /// The same optimizer with its learning rate following `schedule`.
    pub fn with_schedule(self, schedule: Schedule) -> Self {
        Self { schedule, ..self }
    }

    /// The same optimizer with gradients clipped as `clipping` says.
    pub fn with_clipping(self, clipping: Clipping) -> Self {
        Self { clipping, ..self }
    }

    /// The same optimizer with `regularization` penalties on the kernels.
    pub fn with_regularization(self, regularization: Regularization) -> Self {
        Self {
            regularization,
            ..self
        }
    }

    /// The same optimizer, except that the parameters under `module` are trained by
    /// `other`'s rule at `other`'s learning rate (its schedule, clipping and penalties
    /// are ignored: this one's apply to both parts).
    pub fn with_part(self, module: impl Into<String>, other: OptimizerSpec) -> Self {
        let part = PartOptimizer {
            module: module.into(),
            algorithm: other.algorithm,
            learning_rate: other.learning_rate,
        };
        Self {
            part: Some(Box::new(part)),
            ..self
        }
    }

    /// Short name used in checkpoints, so a checkpoint is never restored into another
    /// kind: the rule's (`adagrad`), with the part's after it (`adagrad+linear:ftrl`).
    pub fn kind(&self) -> String {
        match &self.part {
            None => self.algorithm.kind().to_string(),
            Some(part) => format!(
                "{}+{}:{}",
                self.algorithm.kind(),
                part.module,
                part.algorithm.kind()
            ),
        }
    }

    /// Checks every rate, bound and strength; the error names the field at fault.
    pub fn validate(&self) -> Result<()> {
        let mut rates = vec![("learning_rate", self.learning_rate)];
        if let Some(part) = &self.part {
            if part.module.is_empty() {
                return Err(Error::Config(
                    "optimizer: part module must name a module (e.g. `linear`)".into(),
                ));
            }
            rates.push(("part learning_rate", part.learning_rate));
        }
        check_each("optimizer", &rates, non_negative, "must be finite and >= 0")?;
        self.schedule.validate()?;
        self.clipping.validate()?;
        self.regularization.validate()
    }
}

#[cfg(test)]
mod tests;
