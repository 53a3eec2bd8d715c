//! Optimizers with Keras' update rules to the letter (where Burn's differ, e.g. in where
//! epsilon goes or where the accumulator starts): [`Adagrad`], [`Rmsprop`] and [`AdamW`], as
//! Burn [`SimpleOptimizer`]s.

use burn::optim::SimpleOptimizer;
use burn::record::Record;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// RMSprop as Keras' `RMSprop`:
///
/// ```text
/// v = rho·v + (1 − rho)·g²;  (centered) a = rho·a + (1 − rho)·g
/// Δ = lr·g / sqrt(v − a² + ε)    (non-centered: sqrt(v + ε))
/// (momentum) m = momentum·m + Δ;  w −= m      (else w −= Δ)
/// ```
#[derive(Clone, Debug)]
pub struct Rmsprop {
    /// Decay of the squared-gradient average.
    pub rho: f64,
    /// Momentum; 0 for none.
    pub momentum: f64,
    /// Added under the square root.
    pub epsilon: f64,
    /// Normalise by the gradient's estimated variance instead of its second moment.
    pub centered: bool,
}

/// RMSprop's per-variable state.
#[derive(Record, Clone)]
pub struct RmspropState<B: Backend, const D: usize> {
    velocity: Tensor<B, D>,
    average: Option<Tensor<B, D>>,
    moment: Option<Tensor<B, D>>,
}

impl<B: Backend> SimpleOptimizer<B> for Rmsprop {
    type State<const D: usize> = RmspropState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        state: Option<RmspropState<B, D>>,
    ) -> (Tensor<B, D>, Option<RmspropState<B, D>>) {
        let (velocity, average, moment) = match state {
            Some(s) => (s.velocity, s.average, s.moment),
            None => (w.zeros_like(), None, None),
        };
        let velocity =
            velocity.mul_scalar(self.rho) + g.clone().powi_scalar(2).mul_scalar(1.0 - self.rho);
        let (denominator, average) = if self.centered {
            let average = average
                .unwrap_or_else(|| w.zeros_like())
                .mul_scalar(self.rho)
                + g.clone().mul_scalar(1.0 - self.rho);
            let denominator = velocity.clone() - average.clone().powi_scalar(2);
            (denominator, Some(average))
        } else {
            (velocity.clone(), None)
        };
        let increment = g.mul_scalar(lr) / denominator.add_scalar(self.epsilon).sqrt();
        let (w, moment) = if self.momentum > 0.0 {
            let moment = moment
                .unwrap_or_else(|| w.zeros_like())
                .mul_scalar(self.momentum)
                + increment;
            (w - moment.clone(), Some(moment))
        } else {
            (w - increment, None)
        };
        let state = RmspropState {
            velocity,
            average,
            moment,
        };
        (w, Some(state))
    }

    fn to_device<const D: usize>(s: RmspropState<B, D>, device: &B::Device) -> RmspropState<B, D> {
        RmspropState {
            velocity: s.velocity.to_device(device),
            average: s.average.map(|t| t.to_device(device)),
            moment: s.moment.map(|t| t.to_device(device)),
        }
    }
}

/// AdamW as Keras' `AdamW` (Adam with decoupled weight decay):
///
/// ```text
/// w −= w·weight_decay·lr
/// m += (g − m)(1 − β1);  v += (g² − v)(1 − β2)
/// w −= lr·sqrt(1 − β2ᵗ)/(1 − β1ᵗ) · m / (sqrt(v) + ε)
/// ```
#[derive(Clone, Debug)]
pub struct AdamW {
    /// Decay of the first moment.
    pub beta_1: f64,
    /// Decay of the second moment.
    pub beta_2: f64,
    /// Added to the root of the second moment.
    pub epsilon: f64,
    /// Decoupled weight decay, per unit of learning rate.
    pub weight_decay: f64,
}

/// AdamW's per-variable state: the moments and the step count.
#[derive(Record, Clone)]
pub struct AdamWState<B: Backend, const D: usize> {
    first: Tensor<B, D>,
    second: Tensor<B, D>,
    steps: usize,
}

impl<B: Backend> SimpleOptimizer<B> for AdamW {
    type State<const D: usize> = AdamWState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        state: Option<AdamWState<B, D>>,
    ) -> (Tensor<B, D>, Option<AdamWState<B, D>>) {
        let (first, second, steps) = match state {
            Some(s) => (s.first, s.second, s.steps),
            None => (w.zeros_like(), w.zeros_like(), 0),
        };
        let t = (steps + 1) as i32;
        let w = if self.weight_decay > 0.0 {
            w.clone() - w.mul_scalar(self.weight_decay * lr)
        } else {
            w
        };
        let first = first.clone() + (g.clone() - first).mul_scalar(1.0 - self.beta_1);
        let second = second.clone() + (g.powi_scalar(2) - second).mul_scalar(1.0 - self.beta_2);
        let alpha = lr * (1.0 - self.beta_2.powi(t)).sqrt() / (1.0 - self.beta_1.powi(t));
        let update =
            first.clone().mul_scalar(alpha) / second.clone().sqrt().add_scalar(self.epsilon);
        let state = AdamWState {
            first,
            second,
            steps: steps + 1,
        };
        (w - update, Some(state))
    }

    fn to_device<const D: usize>(s: AdamWState<B, D>, device: &B::Device) -> AdamWState<B, D> {
        AdamWState {
            first: s.first.to_device(device),
            second: s.second.to_device(device),
            steps: s.steps,
        }
    }
}

/// Adagrad as Keras' `Adagrad` (and TF's canned DNN default):
///
/// ```text
/// a = a + g²    (a starts at initial_accumulator_value)
/// w −= lr·g / sqrt(a + ε)
/// ```
#[derive(Clone, Debug)]
pub struct Adagrad {
    /// Starting value of the accumulator (TF: 0.1).
    pub initial_accumulator_value: f64,
    /// Added under the square root.
    pub epsilon: f64,
}

/// Adagrad's per-variable state: the accumulated squared gradients.
#[derive(Record, Clone)]
pub struct AdagradState<B: Backend, const D: usize> {
    accumulator: Tensor<B, D>,
}

impl<B: Backend> SimpleOptimizer<B> for Adagrad {
    type State<const D: usize> = AdagradState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        state: Option<AdagradState<B, D>>,
    ) -> (Tensor<B, D>, Option<AdagradState<B, D>>) {
        let accumulator = match state {
            Some(s) => s.accumulator,
            None => w.zeros_like().add_scalar(self.initial_accumulator_value),
        } + g.clone().powi_scalar(2);
        let update = g.mul_scalar(lr) / accumulator.clone().add_scalar(self.epsilon).sqrt();
        (w - update, Some(AdagradState { accumulator }))
    }

    fn to_device<const D: usize>(s: AdagradState<B, D>, device: &B::Device) -> AdagradState<B, D> {
        AdagradState {
            accumulator: s.accumulator.to_device(device),
        }
    }
}
