//! [`Ftrl`]: Follow-The-Regularized-Leader (McMahan et al. 2013), TF's `Ftrl` and the
//! default optimizer of its canned linear models, as a Burn [`SimpleOptimizer`].

use burn::optim::SimpleOptimizer;
use burn::record::Record;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// FTRL-Proximal with TF's parameters; one step of variable `w`, gradient `g`:
///
/// ```text
/// g' = g + 2·l2_shrinkage·w
/// n' = n + g²
/// z  = z + g' − (n'^−p − n^−p) / lr · w          (p = learning_rate_power)
/// w  = (sign(z)·l1 − z) / ((beta + n'^−p) / lr + 2·l2)   if |z| > l1, else 0
/// ```
///
/// with `n` starting at `initial_accumulator_value` and `z` at 0 (TF's `ApplyFtrlV2`).
#[derive(Clone, Debug)]
pub struct Ftrl {
    /// Exponent of the accumulator in the per-coordinate rate (TF: −0.5).
    pub learning_rate_power: f64,
    /// Starting value of the squared-gradient accumulator (TF: 0.1).
    pub initial_accumulator_value: f64,
    /// L1 regularisation strength.
    pub l1: f64,
    /// L2 regularisation strength.
    pub l2: f64,
    /// L2 shrinkage applied to the gradient (TF's `l2_shrinkage_regularization_strength`).
    pub l2_shrinkage: f64,
    /// TF's `beta`.
    pub beta: f64,
}

/// FTRL's per-variable state: the accumulator `n` and the linear term `z`.
#[derive(Record, Clone)]
pub struct FtrlState<B: Backend, const D: usize> {
    pub(super) accumulator: Tensor<B, D>,
    pub(super) linear: Tensor<B, D>,
}

impl<B: Backend> SimpleOptimizer<B> for Ftrl {
    type State<const D: usize> = FtrlState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: f64,
        w: Tensor<B, D>,
        g: Tensor<B, D>,
        state: Option<FtrlState<B, D>>,
    ) -> (Tensor<B, D>, Option<FtrlState<B, D>>) {
        let (n, z) = match state {
            Some(s) => (s.accumulator, s.linear),
            None => (
                w.zeros_like().add_scalar(self.initial_accumulator_value),
                w.zeros_like(),
            ),
        };
        let shrunk = if self.l2_shrinkage > 0.0 {
            g.clone() + w.clone().mul_scalar(2.0 * self.l2_shrinkage)
        } else {
            g.clone()
        };
        let n_new = n.clone() + g.powi_scalar(2);
        let power = -self.learning_rate_power;
        let sigma = (n_new.clone().powf_scalar(power) - n.powf_scalar(power)).div_scalar(lr);
        let z = z + shrunk - sigma * w;
        let quadratic = n_new
            .clone()
            .powf_scalar(power)
            .add_scalar(self.beta)
            .div_scalar(lr)
            .add_scalar(2.0 * self.l2);
        let shrink = z.clone().sign().mul_scalar(self.l1) - z.clone();
        let active = z.clone().abs().greater_elem(self.l1);
        let w = (shrink / quadratic).mask_fill(active.bool_not(), 0.0);
        let state = FtrlState {
            accumulator: n_new,
            linear: z,
        };
        (w, Some(state))
    }

    fn to_device<const D: usize>(state: FtrlState<B, D>, device: &B::Device) -> FtrlState<B, D> {
        FtrlState {
            accumulator: state.accumulator.to_device(device),
            linear: state.linear.to_device(device),
        }
    }
}
