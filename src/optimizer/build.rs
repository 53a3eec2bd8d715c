//! Turning an [`OptimizerSpec`] into the Burn optimizer it names.

use burn::optim::momentum::MomentumConfig;
use burn::optim::{SgdConfig, SimpleOptimizer};
use burn::tensor::backend::AutodiffBackend;

use super::{Adagrad, AdamW, Ftrl, OptimizerSpec, Rmsprop};

/// Code generic over the Burn optimizer type, run by [`build_optimizer`] with the one an
/// [`OptimizerSpec`] names.
pub trait WithOptimizer<B: AutodiffBackend> {
    /// What the code returns.
    type Output;
    /// Runs with `optim`.
    fn run<O: SimpleOptimizer<B::InnerBackend> + 'static>(self, optim: O) -> Self::Output;
}

/// Builds the Burn optimizer `spec` names and hands it to `code`.
pub fn build_optimizer<B: AutodiffBackend, W: WithOptimizer<B>>(
    spec: &OptimizerSpec,
    code: W,
) -> W::Output {
    match *spec {
        OptimizerSpec::Adam {
            beta_1,
            beta_2,
            epsilon,
            ..
        } => code.run(AdamW {
            // Keras' Adam is its AdamW without decay; Burn's adds epsilon elsewhere.
            beta_1: beta_1 as f64,
            beta_2: beta_2 as f64,
            epsilon: epsilon as f64,
            weight_decay: 0.0,
        }),
        OptimizerSpec::Adagrad {
            epsilon,
            initial_accumulator_value,
            ..
        } => code.run(Adagrad {
            initial_accumulator_value,
            epsilon: epsilon as f64,
        }),
        OptimizerSpec::Ftrl {
            learning_rate_power,
            initial_accumulator_value,
            l1,
            l2,
            l2_shrinkage,
            beta,
            ..
        } => code.run(Ftrl {
            learning_rate_power,
            initial_accumulator_value,
            l1,
            l2,
            l2_shrinkage,
            beta,
        }),
        OptimizerSpec::Rmsprop {
            rho,
            momentum,
            epsilon,
            centered,
            ..
        } => code.run(Rmsprop {
            rho,
            momentum,
            epsilon,
            centered,
        }),
        OptimizerSpec::AdamW {
            beta_1,
            beta_2,
            epsilon,
            weight_decay,
            ..
        } => code.run(AdamW {
            beta_1,
            beta_2,
            epsilon,
            weight_decay,
        }),
        OptimizerSpec::Sgd {
            momentum, nesterov, ..
        } => {
            // No dampening: TF's momentum (Burn's default damps by 0.1).
            let momentum = (momentum != 0.0).then(|| {
                MomentumConfig::new()
                    .with_momentum(momentum)
                    .with_dampening(0.0)
                    .with_nesterov(nesterov)
            });
            code.run(
                SgdConfig::new()
                    .with_momentum(momentum)
                    .build::<B::InnerBackend>(),
            )
        }
    }
}
