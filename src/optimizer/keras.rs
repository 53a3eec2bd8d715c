//! Optimizers with Keras' update rules to the letter (where Burn's differ, e.g. in where
//! epsilon goes or where the accumulator starts): [`Adagrad`], [`Rmsprop`] and [`AdamW`], as
//! Burn [`SimpleOptimizer`]s.

use burn::optim::SimpleOptimizer;
use burn::record::Record;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use super::host_pass;

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
    pub(super) velocity: Tensor<B, D>,
    pub(super) average: Option<Tensor<B, D>>,
    pub(super) moment: Option<Tensor<B, D>>,
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
    pub(super) first: Tensor<B, D>,
    pub(super) second: Tensor<B, D>,
    pub(super) steps: usize,
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
        let state = state.unwrap_or_else(|| AdamWState {
            first: w.zeros_like(),
            second: w.zeros_like(),
            steps: 0,
        });
        let (w, state) = if host_pass::eligible(&[&w, &g, &state.first, &state.second]) {
            self.step_on_host(lr, w, g, state)
        } else {
            self.step_with_tensor_ops(lr, w, g, state)
        };
        (w, Some(state))
    }

    fn to_device<const D: usize>(s: AdamWState<B, D>, device: &B::Device) -> AdamWState<B, D> {
        AdamWState {
            first: s.first.to_device(device),
            second: s.second.to_device(device),
            steps: s.steps,
        }
    }
}

impl AdamW {
    /// The step's learning-rate factor: `lr·sqrt(1 − β2ᵗ)/(1 − β1ᵗ)` for step `t`.
    fn alpha(&self, lr: f64, t: usize) -> f64 {
        let t = t as i32;
        lr * (1.0 - self.beta_2.powi(t)).sqrt() / (1.0 - self.beta_1.powi(t))
    }

    fn step_with_tensor_ops<B: Backend, const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        AdamWState {
            first,
            second,
            steps,
        }: AdamWState<B, D>,
    ) -> (Tensor<B, D>, AdamWState<B, D>) {
        let w = if self.weight_decay > 0.0 {
            w.clone() - w.mul_scalar(self.weight_decay * lr)
        } else {
            w
        };
        let first = first.clone() + (g.clone() - first).mul_scalar(1.0 - self.beta_1);
        let second = second.clone() + (g.powi_scalar(2) - second).mul_scalar(1.0 - self.beta_2);
        let alpha = self.alpha(lr, steps + 1);
        let update =
            first.clone().mul_scalar(alpha) / second.clone().sqrt().add_scalar(self.epsilon);
        let state = AdamWState {
            first,
            second,
            steps: steps + 1,
        };
        (w - update, state)
    }

    /// [`step_with_tensor_ops`](Self::step_with_tensor_ops) element by element, the same
    /// operations in the same order and precision, in one pass.
    fn step_on_host<B: Backend, const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        AdamWState {
            first,
            second,
            steps,
        }: AdamWState<B, D>,
    ) -> (Tensor<B, D>, AdamWState<B, D>) {
        let decay = (self.weight_decay * lr) as f32;
        let (keep_1, keep_2) = ((1.0 - self.beta_1) as f32, (1.0 - self.beta_2) as f32);
        let (alpha, epsilon) = (self.alpha(lr, steps + 1) as f32, self.epsilon as f32);
        let [w, _, first, second] = host_pass::in_place([w, g, first, second], |[w, g, m, v]| {
            let moments = m.iter_mut().zip(v.iter_mut());
            for ((w, g), (m, v)) in w.iter_mut().zip(g.iter()).zip(moments) {
                if decay > 0.0 {
                    *w -= *w * decay;
                }
                *m += (g - *m) * keep_1;
                *v += (g * g - *v) * keep_2;
                *w -= *m * alpha / (v.sqrt() + epsilon);
            }
        });
        let state = AdamWState {
            first,
            second,
            steps: steps + 1,
        };
        (w, state)
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
    pub(super) accumulator: Tensor<B, D>,
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
        };
        let (w, accumulator) = if host_pass::eligible(&[&w, &g, &accumulator]) {
            self.step_on_host(lr, w, g, accumulator)
        } else {
            self.step_with_tensor_ops(lr, w, g, accumulator)
        };
        (w, Some(AdagradState { accumulator }))
    }

    fn to_device<const D: usize>(s: AdagradState<B, D>, device: &B::Device) -> AdagradState<B, D> {
        AdagradState {
            accumulator: s.accumulator.to_device(device),
        }
    }
}

impl Adagrad {
    fn step_with_tensor_ops<B: Backend, const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        accumulator: Tensor<B, D>,
    ) -> (Tensor<B, D>, Tensor<B, D>) {
        let accumulator = accumulator + g.clone().powi_scalar(2);
        let update = g.mul_scalar(lr) / accumulator.clone().add_scalar(self.epsilon).sqrt();
        (w - update, accumulator)
    }

    /// [`step_with_tensor_ops`](Self::step_with_tensor_ops) element by element, in one pass.
    fn step_on_host<B: Backend, const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        accumulator: Tensor<B, D>,
    ) -> (Tensor<B, D>, Tensor<B, D>) {
        let (lr, epsilon) = (lr as f32, self.epsilon as f32);
        let [w, _, accumulator] = host_pass::in_place([w, g, accumulator], |[w, g, a]| {
            for ((w, g), a) in w.iter_mut().zip(g.iter()).zip(a.iter_mut()) {
                *a += g * g;
                *w -= g * lr / (*a + epsilon).sqrt();
            }
        });
        (w, accumulator)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Distribution, Tensor};

    use super::*;

    type B = burn::backend::Flex;

    /// The one-pass update on the host gives the tensor ops' result bit for bit, step after
    /// step, with and without weight decay.
    #[test]
    fn adamw_on_the_host_equals_adamw_in_tensor_ops() {
        let device = Default::default();
        for weight_decay in [0.0, 0.004] {
            let adam = AdamW {
                beta_1: 0.9,
                beta_2: 0.999,
                epsilon: 1e-7,
                weight_decay,
            };
            // Large enough for the host pass to be split over threads.
            let w = crate::seed::with_seed::<B, _>(&device, 1, || {
                Tensor::<B, 2>::random([263, 257], Distribution::Normal(0.0, 1.0), &device)
            });
            let zeros = || AdamWState {
                first: w.zeros_like(),
                second: w.zeros_like(),
                steps: 0,
            };
            let (mut host, mut ops) = ((w.clone(), zeros()), (w.clone(), zeros()));
            assert!(host_pass::eligible(&[&w]));
            for step in 0..5 {
                let g = crate::seed::with_seed::<B, _>(&device, 10 + step as u64, || {
                    Tensor::<B, 2>::random([263, 257], Distribution::Normal(0.0, 0.1), &device)
                });
                let lr = 0.01 / (step + 1) as f64;
                host = adam.step_on_host(lr, host.0, g.clone(), host.1);
                ops = adam.step_with_tensor_ops(lr, ops.0, g, ops.1);
                assert_eq!(bits(&host.0), bits(&ops.0), "weights, step {step}");
                assert_eq!(bits(&host.1.first), bits(&ops.1.first), "first moment");
                assert_eq!(bits(&host.1.second), bits(&ops.1.second), "second moment");
                assert_eq!(host.1.steps, ops.1.steps);
            }
            assert_ne!(host.0.to_data(), w.to_data(), "the weights moved");
        }
    }

    #[test]
    fn adagrad_on_the_host_equals_adagrad_in_tensor_ops() {
        let device = Default::default();
        let adagrad = Adagrad {
            initial_accumulator_value: 0.1,
            epsilon: 1e-7,
        };
        let w = crate::seed::with_seed::<B, _>(&device, 3, || {
            Tensor::<B, 1>::random([70_001], Distribution::Normal(0.0, 1.0), &device)
        });
        let start = w.zeros_like().add_scalar(0.1);
        let (mut host, mut ops) = ((w.clone(), start.clone()), (w.clone(), start));
        for step in 0..5 {
            let g = crate::seed::with_seed::<B, _>(&device, 10 + step as u64, || {
                Tensor::<B, 1>::random([70_001], Distribution::Normal(0.0, 0.1), &device)
            });
            host = adagrad.step_on_host(0.05, host.0, g.clone(), host.1);
            ops = adagrad.step_with_tensor_ops(0.05, ops.0, g, ops.1);
            assert_eq!(bits(&host.0), bits(&ops.0), "weights, step {step}");
            assert_eq!(bits(&host.1), bits(&ops.1), "accumulator, step {step}");
        }
        assert_ne!(host.0.to_data(), w.to_data(), "the weights moved");
    }

    fn bits<const D: usize>(t: &Tensor<B, D>) -> Vec<u32> {
        let data = t.to_data();
        data.as_slice::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    }
}
