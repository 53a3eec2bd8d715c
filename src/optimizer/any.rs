//! One Burn optimizer type for every update rule an [`Algorithm`] names, so the training
//! loop is compiled once whatever the rule.

use burn::optim::momentum::MomentumConfig;
use burn::optim::{Sgd, SgdConfig, SgdState, SimpleOptimizer};
use burn::record::Record;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use super::spec::Algorithm;
use super::{Adagrad, AdagradState, AdamW, AdamWState, Ftrl, FtrlState, Rmsprop, RmspropState};

/// The Burn optimizer of one [`Algorithm`].
#[derive(Clone)]
pub enum AnyOptimizer<B: Backend> {
    /// SGD, with TF's momentum (no dampening).
    Sgd(Sgd<B>),
    /// Adam (no weight decay) and AdamW, with Keras' epsilon.
    AdamW(AdamW),
    /// Adagrad with Keras' accumulator start.
    Adagrad(Adagrad),
    /// RMSprop as Keras'.
    Rmsprop(Rmsprop),
    /// FTRL-Proximal as TF's.
    Ftrl(Ftrl),
}

/// The per-parameter state of an [`AnyOptimizer`]: its rule's.
#[derive(Record, Clone)]
pub enum AnyState<B: Backend, const D: usize> {
    /// SGD's momentum.
    Sgd(SgdState<B, D>),
    /// Adam's moments.
    AdamW(AdamWState<B, D>),
    /// Adagrad's accumulator.
    Adagrad(AdagradState<B, D>),
    /// RMSprop's averages.
    Rmsprop(RmspropState<B, D>),
    /// FTRL's accumulators.
    Ftrl(FtrlState<B, D>),
}

impl<B: Backend> AnyOptimizer<B> {
    /// The optimizer `algorithm` names.
    pub fn new(algorithm: &Algorithm) -> Self {
        match *algorithm {
            Algorithm::Adam {
                beta_1,
                beta_2,
                epsilon,
            } => AnyOptimizer::AdamW(AdamW {
                // Keras' Adam is its AdamW without decay; Burn's adds epsilon elsewhere.
                beta_1: beta_1 as f64,
                beta_2: beta_2 as f64,
                epsilon: epsilon as f64,
                weight_decay: 0.0,
            }),
            Algorithm::AdamW {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            } => AnyOptimizer::AdamW(AdamW {
                beta_1,
                beta_2,
                epsilon,
                weight_decay,
            }),
            Algorithm::Adagrad {
                epsilon,
                initial_accumulator_value,
            } => AnyOptimizer::Adagrad(Adagrad {
                initial_accumulator_value,
                epsilon: epsilon as f64,
            }),
            Algorithm::Rmsprop {
                rho,
                momentum,
                epsilon,
                centered,
            } => AnyOptimizer::Rmsprop(Rmsprop {
                rho,
                momentum,
                epsilon,
                centered,
            }),
            Algorithm::Ftrl {
                learning_rate_power,
                initial_accumulator_value,
                l1,
                l2,
                l2_shrinkage,
                beta,
            } => AnyOptimizer::Ftrl(Ftrl {
                learning_rate_power,
                initial_accumulator_value,
                l1,
                l2,
                l2_shrinkage,
                beta,
            }),
            Algorithm::Sgd { momentum, nesterov } => {
                // No dampening: TF's momentum (Burn's default damps by 0.1).
                let momentum = (momentum != 0.0).then(|| {
                    MomentumConfig::new()
                        .with_momentum(momentum)
                        .with_dampening(0.0)
                        .with_nesterov(nesterov)
                });
                AnyOptimizer::Sgd(SgdConfig::new().with_momentum(momentum).build())
            }
        }
    }
}

/// Runs the rule `$optim` of variant `$variant` on `$state` when the state is that rule's;
/// a state of another rule (ruled out once a checkpoint's optimizer kind is checked)
/// starts fresh.
macro_rules! step_with {
    ($variant:ident, $optim:expr, $lr:expr, $w:expr, $g:expr, $state:expr) => {{
        let state = match $state {
            Some(AnyState::$variant(state)) => Some(state),
            _ => None,
        };
        let (w, state) = $optim.step($lr, $w, $g, state);
        (w, state.map(AnyState::$variant))
    }};
}

impl<B: Backend> SimpleOptimizer<B> for AnyOptimizer<B> {
    type State<const D: usize> = AnyState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        state: Option<AnyState<B, D>>,
    ) -> (Tensor<B, D>, Option<AnyState<B, D>>) {
        match self {
            AnyOptimizer::Sgd(o) => step_with!(Sgd, o, lr, w, g, state),
            AnyOptimizer::AdamW(o) => step_with!(AdamW, o, lr, w, g, state),
            AnyOptimizer::Adagrad(o) => step_with!(Adagrad, o, lr, w, g, state),
            AnyOptimizer::Rmsprop(o) => step_with!(Rmsprop, o, lr, w, g, state),
            AnyOptimizer::Ftrl(o) => step_with!(Ftrl, o, lr, w, g, state),
        }
    }

    fn to_device<const D: usize>(state: AnyState<B, D>, device: &B::Device) -> AnyState<B, D> {
        match state {
            AnyState::Sgd(s) => AnyState::Sgd(Sgd::<B>::to_device(s, device)),
            AnyState::AdamW(s) => {
                AnyState::AdamW(<AdamW as SimpleOptimizer<B>>::to_device(s, device))
            }
            AnyState::Adagrad(s) => {
                AnyState::Adagrad(<Adagrad as SimpleOptimizer<B>>::to_device(s, device))
            }
            AnyState::Rmsprop(s) => {
                AnyState::Rmsprop(<Rmsprop as SimpleOptimizer<B>>::to_device(s, device))
            }
            AnyState::Ftrl(s) => AnyState::Ftrl(<Ftrl as SimpleOptimizer<B>>::to_device(s, device)),
        }
    }
}
