//! The optimizer a parameter server runs over its variables: the same Burn optimizer, state
//! and arithmetic as a single process's, applied to one variable at a time.

use burn::tensor::{Tensor, TensorData};

use crate::device::CpuTrainBackend;
use crate::optimizer::{Optimizer, OptimizerSpec};

type Inner = <CpuTrainBackend as burn::tensor::backend::AutodiffBackend>::InnerBackend;

/// Why a ps could not update a variable or (de)serialise its optimizer state; each names
/// the variable at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VariableOptimizerError {
    /// The values or the gradient do not fill the variable's shape.
    #[error(
        "{path}: shape {shape:?} holds {elements} values, got {values} values and a gradient \
         of {gradient}"
    )]
    SizeMismatch {
        /// The variable.
        path: String,
        /// Its shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        elements: usize,
        /// Values held.
        values: usize,
        /// Gradient values received.
        gradient: usize,
    },
    /// Only ranks 1 to 4 are updated on parameter servers.
    #[error(
        "{path}: variables of rank {rank} are not supported on parameter servers (ranks 1 to \
         4 are)"
    )]
    UnsupportedRank {
        /// The variable.
        path: String,
        /// Its rank.
        rank: usize,
    },
    /// The backend could not read the updated values back.
    #[error("{path}: {message}")]
    Backend {
        /// The variable.
        path: String,
        /// What the backend said.
        message: String,
    },
    /// The serialised optimizer state could not be written or read.
    #[error("optimizer state: {0}")]
    State(String),
}

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
    ) -> Result<(), VariableOptimizerError> {
        let device = Default::default();
        let shape: [usize; D] =
            shape
                .try_into()
                .map_err(|_| VariableOptimizerError::UnsupportedRank {
                    path: path.to_string(),
                    rank: shape.len(),
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
            .map_err(|e| VariableOptimizerError::Backend {
                path: path.to_string(),
                message: format!("{e:?}"),
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
    ) -> Result<(), VariableOptimizerError> {
        let elements: usize = shape.iter().product();
        if values.len() != elements || grad.len() != elements {
            return Err(VariableOptimizerError::SizeMismatch {
                path: path.to_string(),
                shape: shape.to_vec(),
                elements,
                values: values.len(),
                gradient: grad.len(),
            });
        }
        match shape.len() {
            1 => self.apply_rank::<1>(learning_rate, path, shape, values, grad),
            2 => self.apply_rank::<2>(learning_rate, path, shape, values, grad),
            3 => self.apply_rank::<3>(learning_rate, path, shape, values, grad),
            4 => self.apply_rank::<4>(learning_rate, path, shape, values, grad),
            rank => Err(VariableOptimizerError::UnsupportedRank {
                path: path.to_string(),
                rank,
            }),
        }
    }

    /// The state of every variable, serialised.
    pub fn state_bytes(&self) -> Result<Vec<u8>, VariableOptimizerError> {
        self.optimizer
            .state_bytes()
            .map_err(|e| VariableOptimizerError::State(e.to_string()))
    }

    /// Replaces the state with serialised state.
    pub fn load_state_bytes(&mut self, bytes: &[u8]) -> Result<(), VariableOptimizerError> {
        self.optimizer
            .load_state_bytes(bytes, &Default::default())
            .map_err(|e| VariableOptimizerError::State(e.to_string()))
    }
}

#[cfg(test)]
mod reference_tests;
