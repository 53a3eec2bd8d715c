//! The optimizer a parameter server runs over its variables: the same Burn optimizer, state
//! and arithmetic as a single process's, applied to one variable at a time.

use burn::tensor::{Tensor, TensorData};

use super::messages::Shaped;
use super::shard::ShardFault;
use crate::device::CpuTrainBackend;
use crate::error::{Error, Result};
use crate::optimizer::{Optimizer, OptimizerSpec};

mod variable_optimizer_fault;

pub use variable_optimizer_fault::VariableOptimizerFault;

type Inner = <CpuTrainBackend as burn::tensor::backend::AutodiffBackend>::InnerBackend;

/// Applies gradients to variables held as flat `f32` values, keeping optimizer state by
/// variable path (the checkpoint's format, so a ps checkpoint restores in one process and
/// back).
pub struct VariableOptimizer {
    optimizer: Optimizer<CpuTrainBackend>,
}

impl VariableOptimizer {
    /// The optimizer `spec` names, for variables on the CPU.
    pub fn new(spec: &OptimizerSpec) -> Self {
        Self {
            optimizer: Optimizer::new(spec),
        }
    }

    /// The optimizer kind, as checkpoints record it ("adam", "adagrad+linear:ftrl").
    pub fn kind(&self) -> String {
        self.optimizer.spec().kind()
    }

    fn apply_rank<const D: usize>(
        &mut self,
        learning_rate: f64,
        path: &str,
        shape: &[usize],
        values: &mut Vec<f32>,
        grad: Vec<f32>,
    ) -> Result<()> {
        let device = Default::default();
        let shape: [usize; D] = shape.try_into().map_err(|_| {
            refused(VariableOptimizerFault::UnsupportedRank {
                path: path.to_string(),
                rank: shape.len(),
            })
        })?;
        let tensor =
            Tensor::<Inner, D>::from_data(TensorData::new(std::mem::take(values), shape), &device);
        let grad = Tensor::<Inner, D>::from_data(TensorData::new(grad, shape), &device);
        let updated = self
            .optimizer
            .step_tensor(learning_rate, path, tensor, grad);
        *values = updated
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .map_err(|e| {
                refused(VariableOptimizerFault::Backend {
                    path: path.to_string(),
                    message: format!("{e:?}"),
                })
            })?;
        Ok(())
    }

    /// One update of the variable `path` of `shape`.
    pub fn apply(
        &mut self,
        learning_rate: f64,
        path: &str,
        shape: &[usize],
        values: &mut Vec<f32>,
        grad: Vec<f32>,
    ) -> Result<()> {
        // The shape came over the wire with the chief's Init: a product past usize saturates
        // (no vector holds that many values) rather than wrapping to a count that matches.
        let elements = shape.iter().fold(1usize, |n, &d| n.saturating_mul(d));
        if values.len() != elements || grad.len() != elements {
            return Err(refused(VariableOptimizerFault::SizeMismatch {
                path: path.to_string(),
                shape: shape.to_vec(),
                elements,
                values: values.len(),
                gradient: grad.len(),
            }));
        }
        match shape.len() {
            1 => self.apply_rank::<1>(learning_rate, path, shape, values, grad),
            2 => self.apply_rank::<2>(learning_rate, path, shape, values, grad),
            3 => self.apply_rank::<3>(learning_rate, path, shape, values, grad),
            4 => self.apply_rank::<4>(learning_rate, path, shape, values, grad),
            rank => Err(refused(VariableOptimizerFault::UnsupportedRank {
                path: path.to_string(),
                rank,
            })),
        }
    }

    /// The state of every variable, serialised.
    pub fn state_bytes(&self) -> Result<Vec<u8>> {
        self.optimizer
            .state_bytes()
            .map_err(|e| refused(VariableOptimizerFault::State(e.to_string())))
    }

    /// Replaces the state with serialised state of `variables`. State that does not load,
    /// or whose shape is not its variable's (the first update would panic in Burn), is
    /// refused, and the state stays as it was.
    pub fn load_state_bytes(&mut self, bytes: &[u8], variables: &Shaped) -> Result<()> {
        let before = self.state_bytes()?;
        let shape_of = |path: &str| variables.get(path).map(|(shape, _)| shape.clone());
        let device = Default::default();
        let fault = match self.optimizer.load_state_bytes(bytes, &device) {
            Ok(()) => self.optimizer.state_shape_fault(shape_of),
            Err(e) => Some(e.to_string()),
        };
        let Some(fault) = fault else {
            return Ok(());
        };
        // What was saved a moment ago loads again.
        let _ = self.optimizer.load_state_bytes(&before, &device);
        Err(refused(VariableOptimizerFault::State(fault)))
    }
}

/// The shard's refusal of the call that met `fault`.
fn refused(fault: VariableOptimizerFault) -> Error {
    Error::Shard(ShardFault::Optimizer(fault))
}

#[cfg(test)]
mod reference_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_of_another_shape_than_its_variable_is_refused_and_the_state_kept() {
        let mut trained = VariableOptimizer::new(&OptimizerSpec::adam(0.1));
        let mut values = vec![1.0; 4];
        trained
            .apply(0.1, "w", &[2, 2], &mut values, vec![0.5; 4])
            .unwrap();
        let state = trained.state_bytes().unwrap();
        let variables =
            |shape: Vec<usize>| Shaped::from([("w".to_string(), (shape, values.clone()))]);
        let mut ps = VariableOptimizer::new(&OptimizerSpec::adam(0.1));
        let err = ps
            .load_state_bytes(&state, &variables(vec![4]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("'w'") && err.contains("[4]"), "{err}");
        assert_eq!(ps.optimizer.state_len(), 0);
        ps.load_state_bytes(&state, &variables(vec![2, 2])).unwrap();
        assert_eq!(ps.optimizer.state_len(), 1);
        let mut values = vec![1.0; 4];
        ps.apply(0.1, "w", &[2, 2], &mut values, vec![0.5; 4])
            .unwrap();
    }

    #[test]
    fn a_shape_whose_product_overflows_is_refused_naming_the_variable() {
        let mut optimizer = VariableOptimizer::new(&OptimizerSpec::sgd(0.1));
        let shape = [1 << 32, 1 << 32];
        let err = optimizer
            .apply(0.1, "w", &shape, &mut Vec::new(), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("w: shape [4294967296, 4294967296]"), "{err}");
    }
}
