//! Which optimizer to train with, as plain serialisable data.

use serde::{Deserialize, Serialize};

use super::{Clipping, Regularization, Schedule};

/// The optimizer an estimator trains with, and its hyper-parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OptimizerSpec {
    /// Adam (Kingma & Ba), TF's defaults except the learning rate.
    Adam {
        /// Step size.
        learning_rate: f64,
        /// Decay of the first moment.
        beta_1: f32,
        /// Decay of the second moment.
        beta_2: f32,
        /// Numerical-stability term.
        epsilon: f32,
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
    /// Adagrad (TF's default for DNN estimators).
    Adagrad {
        /// Step size.
        learning_rate: f64,
        /// Numerical-stability term.
        epsilon: f32,
        /// Starting value of the squared-gradient accumulator (TF: 0.1).
        #[serde(default = "tf_initial_accumulator")]
        initial_accumulator_value: f64,
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
    /// Plain stochastic gradient descent, optionally with momentum.
    Sgd {
        /// Step size.
        learning_rate: f64,
        /// Momentum factor; 0 disables momentum.
        momentum: f64,
        /// Nesterov momentum (TF's `use_nesterov`).
        #[serde(default)]
        nesterov: bool,
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
    /// RMSprop as Keras' `RMSprop`.
    Rmsprop {
        /// Step size.
        learning_rate: f64,
        /// Decay of the squared-gradient average (TF: 0.9).
        rho: f64,
        /// Momentum; 0 for none.
        momentum: f64,
        /// Added under the square root (TF: 1e-7).
        epsilon: f64,
        /// Normalise by the gradient's estimated variance.
        centered: bool,
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
    /// AdamW (Adam with decoupled weight decay) as Keras' `AdamW`.
    AdamW {
        /// Step size.
        learning_rate: f64,
        /// Decay of the first moment.
        beta_1: f64,
        /// Decay of the second moment.
        beta_2: f64,
        /// Numerical-stability term.
        epsilon: f64,
        /// Decoupled weight decay (TF: 0.004).
        weight_decay: f64,
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
    /// FTRL-Proximal (TF's `Ftrl`, the default of its canned linear models).
    Ftrl {
        /// Step size.
        learning_rate: f64,
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
        /// How the rate changes with the global step (constant by default).
        #[serde(default, skip_serializing_if = "Schedule::is_constant")]
        schedule: Schedule,
        /// How gradients are clipped before the update (not by default).
        #[serde(default, skip_serializing_if = "Clipping::is_none")]
        clipping: Clipping,
        /// L1 / L2 penalties on the kernels (none by default).
        #[serde(default, skip_serializing_if = "Regularization::is_none")]
        regularization: Regularization,
    },
}

fn tf_initial_accumulator() -> f64 {
    0.1
}

impl OptimizerSpec {
    /// Adam with `learning_rate` and TF's beta/epsilon defaults (0.9, 0.999, 1e-7).
    pub fn adam(learning_rate: f64) -> Self {
        OptimizerSpec::Adam {
            learning_rate,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-7,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// Adagrad with `learning_rate` and TF's accumulator start 0.1 (TF's DNNClassifier
    /// default rate is 0.05).
    pub fn adagrad(learning_rate: f64) -> Self {
        OptimizerSpec::Adagrad {
            learning_rate,
            epsilon: 1e-7,
            initial_accumulator_value: tf_initial_accumulator(),
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// SGD with `learning_rate` and no momentum.
    pub fn sgd(learning_rate: f64) -> Self {
        OptimizerSpec::Sgd {
            learning_rate,
            momentum: 0.0,
            nesterov: false,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// SGD with `momentum` (Nesterov's when `nesterov`), as TF's `SGD`.
    pub fn sgd_momentum(learning_rate: f64, momentum: f64, nesterov: bool) -> Self {
        OptimizerSpec::Sgd {
            learning_rate,
            momentum,
            nesterov,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// RMSprop with `learning_rate` and TF's defaults (rho 0.9, no momentum, epsilon
    /// 1e-7, not centered).
    pub fn rmsprop(learning_rate: f64) -> Self {
        OptimizerSpec::Rmsprop {
            learning_rate,
            rho: 0.9,
            momentum: 0.0,
            epsilon: 1e-7,
            centered: false,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// AdamW with `learning_rate` and TF's defaults (weight decay 0.004, betas 0.9 /
    /// 0.999, epsilon 1e-7).
    pub fn adamw(learning_rate: f64) -> Self {
        OptimizerSpec::AdamW {
            learning_rate,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-7,
            weight_decay: 0.004,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// FTRL with `learning_rate` and TF's defaults (power −0.5, accumulator 0.1, no
    /// regularisation).
    pub fn ftrl(learning_rate: f64) -> Self {
        OptimizerSpec::Ftrl {
            learning_rate,
            learning_rate_power: -0.5,
            initial_accumulator_value: 0.1,
            l1: 0.0,
            l2: 0.0,
            l2_shrinkage: 0.0,
            beta: 0.0,
            schedule: Schedule::default(),
            clipping: Clipping::default(),
            regularization: Regularization::default(),
        }
    }

    /// The learning rate, whichever the kind.
    pub fn learning_rate(&self) -> f64 {
        match self {
            OptimizerSpec::Adam { learning_rate, .. }
            | OptimizerSpec::Adagrad { learning_rate, .. }
            | OptimizerSpec::Sgd { learning_rate, .. }
            | OptimizerSpec::Rmsprop { learning_rate, .. }
            | OptimizerSpec::AdamW { learning_rate, .. }
            | OptimizerSpec::Ftrl { learning_rate, .. } => *learning_rate,
        }
    }

    /// How the learning rate changes with the global step.
    pub fn schedule(&self) -> &Schedule {
        match self {
            OptimizerSpec::Adam { schedule, .. }
            | OptimizerSpec::Adagrad { schedule, .. }
            | OptimizerSpec::Sgd { schedule, .. }
            | OptimizerSpec::Rmsprop { schedule, .. }
            | OptimizerSpec::AdamW { schedule, .. }
            | OptimizerSpec::Ftrl { schedule, .. } => schedule,
        }
    }

    /// The same optimizer with its learning rate following `schedule`.
    pub fn with_schedule(mut self, new: Schedule) -> Self {
        match &mut self {
            OptimizerSpec::Adam { schedule, .. }
            | OptimizerSpec::Adagrad { schedule, .. }
            | OptimizerSpec::Sgd { schedule, .. }
            | OptimizerSpec::Rmsprop { schedule, .. }
            | OptimizerSpec::AdamW { schedule, .. }
            | OptimizerSpec::Ftrl { schedule, .. } => *schedule = new,
        }
        self
    }

    /// How gradients are clipped before each update.
    pub fn clipping(&self) -> Clipping {
        match self {
            OptimizerSpec::Adam { clipping, .. }
            | OptimizerSpec::Adagrad { clipping, .. }
            | OptimizerSpec::Sgd { clipping, .. }
            | OptimizerSpec::Rmsprop { clipping, .. }
            | OptimizerSpec::AdamW { clipping, .. }
            | OptimizerSpec::Ftrl { clipping, .. } => *clipping,
        }
    }

    /// The same optimizer with gradients clipped as `new` says.
    pub fn with_clipping(mut self, new: Clipping) -> Self {
        match &mut self {
            OptimizerSpec::Adam { clipping, .. }
            | OptimizerSpec::Adagrad { clipping, .. }
            | OptimizerSpec::Sgd { clipping, .. }
            | OptimizerSpec::Rmsprop { clipping, .. }
            | OptimizerSpec::AdamW { clipping, .. }
            | OptimizerSpec::Ftrl { clipping, .. } => *clipping = new,
        }
        self
    }

    /// The L1 / L2 penalties on the kernels.
    pub fn regularization(&self) -> Regularization {
        match self {
            OptimizerSpec::Adam { regularization, .. }
            | OptimizerSpec::Adagrad { regularization, .. }
            | OptimizerSpec::Sgd { regularization, .. }
            | OptimizerSpec::Rmsprop { regularization, .. }
            | OptimizerSpec::AdamW { regularization, .. }
            | OptimizerSpec::Ftrl { regularization, .. } => *regularization,
        }
    }

    /// The same optimizer with `new` penalties on the kernels.
    pub fn with_regularization(mut self, new: Regularization) -> Self {
        match &mut self {
            OptimizerSpec::Adam { regularization, .. }
            | OptimizerSpec::Adagrad { regularization, .. }
            | OptimizerSpec::Sgd { regularization, .. }
            | OptimizerSpec::Rmsprop { regularization, .. }
            | OptimizerSpec::AdamW { regularization, .. }
            | OptimizerSpec::Ftrl { regularization, .. } => *regularization = new,
        }
        self
    }

    /// Short name used in checkpoints, so a checkpoint is never restored into another kind.
    pub fn kind(&self) -> &'static str {
        match self {
            OptimizerSpec::Adam { .. } => "adam",
            OptimizerSpec::Adagrad { .. } => "adagrad",
            OptimizerSpec::Sgd { .. } => "sgd",
            OptimizerSpec::Rmsprop { .. } => "rmsprop",
            OptimizerSpec::AdamW { .. } => "adamw",
            OptimizerSpec::Ftrl { .. } => "ftrl",
        }
    }
}
