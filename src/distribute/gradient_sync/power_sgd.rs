//! PowerSGD (Vogels, Karimireddy and Jaggi, 2019; PyTorch DDP's `powerSGD_hook`): a large
//! gradient matrix crosses the wire as two thin ones.
//!
//! For each parameter of two or more dimensions, seen as an m × n matrix (its first
//! dimension by the rest), a rank adds the error it kept from the step before to its
//! gradient, M = G + E, and sends P = M Q (m × r). The averaged P is orthonormalised
//! (Gram-Schmidt over its r columns, the same bits on every rank), and each rank sends
//! Q = Mᵀ P (n × r). The averaged Q gives every rank the same approximation P Qᵀ of the mean
//! of the M, which is the gradient the step applies; each rank keeps what its own M lost,
//! E = M − P Qᵀ, and adds it back the next step (error feedback), so nothing is dropped, only
//! delayed. Q is kept for the next step (warm start), so one step's power iteration refines
//! the last one's. A matrix of rank at most r crosses exactly.
//!
//! Everything is computed on the gradients' device, where they lie: on a GPU the matrix
//! products cost far less than moving m·n values through the host, which is the point.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::params::Taken;

/// Low-rank gradient compression for synchronous replicas (PyTorch's `PowerSGDState`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerSgd {
    /// Columns of P and Q (PyTorch's `matrix_approximation_rank`): each compressed m × n
    /// gradient crosses as (m + n) · rank values instead of m · n.
    pub rank: usize,
    /// Steps of each run averaged in full before compression starts (PyTorch's
    /// `start_powerSGD_iter`, default 1000): the first steps of training move the weights
    /// most, and a low-rank approximation of them slows the start.
    #[serde(default = "default_start_step")]
    pub start_step: u64,
    /// A matrix is compressed only when that divides the values it sends by at least this
    /// (PyTorch's `min_compression_rate`, default 2); the others, and every vector, are
    /// averaged in full.
    #[serde(default = "default_min_compression_rate")]
    pub min_compression_rate: f32,
}

fn default_start_step() -> u64 {
    1000
}

fn default_min_compression_rate() -> f32 {
    2.0
}

impl PowerSgd {
    /// Compression to `rank` columns, from step 1000 of each run, of the matrices it
    /// shrinks at least twofold.
    pub fn new(rank: usize) -> Self {
        Self {
            rank,
            start_step: default_start_step(),
            min_compression_rate: default_min_compression_rate(),
        }
    }

    /// Compression from step `step` of each run (0: from the first).
    pub fn with_start_step(mut self, step: u64) -> Self {
        self.start_step = step;
        self
    }

    /// Compression of the matrices it shrinks by at least `rate` (0: of every matrix).
    pub fn with_min_compression_rate(mut self, rate: f32) -> Self {
        self.min_compression_rate = rate;
        self
    }

    /// The rank an m × n matrix is compressed to, or `None` when it is averaged in full.
    fn rank_for(&self, rows: usize, cols: usize) -> Option<usize> {
        let rank = self.rank.min(rows).min(cols);
        let sent = (rows + cols) * rank;
        let whole = rows * cols;
        (rank > 0 && whole as f32 >= self.min_compression_rate * sent as f32).then_some(rank)
    }
}

/// The compression's state across steps: the steps seen, and each compressed matrix's Q and
/// error, on the backend of the gradients (kept type-erased, since the averager is not
/// generic over it).
#[derive(Default)]
pub(super) struct LowRankState {
    config: Option<PowerSgd>,
    steps: u64,
    /// Whether the first compressed step has been logged.
    logged: bool,
    matrices: Option<Box<dyn Any + Send>>,
}

impl fmt::Debug for LowRankState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LowRankState")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl LowRankState {
    pub(super) fn new(config: Option<PowerSgd>) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// Counts a step; the step's compression when this one is compressed.
    pub(super) fn next_step<B: Backend>(&mut self) -> Option<LowRankStep<'_, B>> {
        let config = self.config?;
        let step = self.steps;
        self.steps += 1;
        if step < config.start_step {
            return None;
        }
        let keep = |m: &Box<dyn Any + Send>| m.is::<Matrices<B>>();
        if !self.matrices.as_ref().is_some_and(keep) {
            self.matrices = Some(Box::new(Matrices::<B>::new()));
        }
        let matrices = self.matrices.as_mut().expect("set above");
        let matrices = matrices.downcast_mut::<Matrices<B>>().expect("checked");
        let log = !std::mem::replace(&mut self.logged, true);
        Some(LowRankStep {
            config,
            matrices,
            compressed: Vec::new(),
            log,
        })
    }
}

type Matrices<B> = BTreeMap<String, Matrix<B>>;

/// One compressed parameter's state.
struct Matrix<B: Backend> {
    rows: usize,
    cols: usize,
    rank: usize,
    /// The Q of the last step (n × r), the same on every rank.
    q: Tensor<B, 2>,
    /// What this rank's approximation left out last step (m × n).
    error: Option<Tensor<B, 2>>,
    /// This step's M = G + E, and its orthonormal P, while the step lasts.
    m: Option<Tensor<B, 2>>,
    p: Option<Tensor<B, 2>>,
}

/// One step's compression, over its two rounds of all-reduces.
pub(super) struct LowRankStep<'a, B: Backend> {
    config: PowerSgd,
    matrices: &'a mut Matrices<B>,
    /// This step's compressed gradients and their Q's length: the second round's layout,
    /// the same on every rank.
    compressed: Vec<(String, usize)>,
    /// Whether this is the first compressed step, which says what is compressed.
    log: bool,
}

impl<B: Backend> LowRankStep<'_, B> {
    /// Round one: replaces in `taken` each gradient to compress by its P = (G + E) Q
    /// (G zeros where this rank did not use the parameter).
    pub(super) fn project<A: AutodiffBackend<InnerBackend = B>>(
        &mut self,
        taken: &mut BTreeMap<String, Taken<A>>,
    ) {
        let before: usize = taken.values().map(|t| t.len).sum();
        self.compress(taken);
        if self.log {
            let rounds: usize = taken.values().map(|t| t.len).sum();
            let second: usize = self.compressed.iter().map(|(_, len)| len).sum();
            let count = self.compressed.len();
            let matrices = if count == 1 { "matrix" } else { "matrices" };
            tracing::info!(
                "PowerSGD from step {} of this run: {count} gradient {matrices} at rank {}, {} \
                 values a step all-reduced where {before} were",
                self.config.start_step,
                self.config.rank,
                rounds + second,
            );
        }
    }

    fn compress<A: AutodiffBackend<InnerBackend = B>>(
        &mut self,
        taken: &mut BTreeMap<String, Taken<A>>,
    ) {
        for (name, taken) in taken.iter_mut() {
            let Some((rows, cols)) = taken.matrix else {
                continue;
            };
            let Some(rank) = self.config.rank_for(rows, cols) else {
                continue;
            };
            self.compressed.push((name.clone(), cols * rank));
            taken.len = rows * rank;
            taken.matrix = None;
            let device = taken.device.clone();
            // A rank that did not use the matrix adds zeros, and its error still carries on.
            let grad = (taken.grad.take()).unwrap_or_else(|| Tensor::zeros([rows * cols], &device));
            let matrix = self.matrices.entry(name.clone()).or_insert_with(|| Matrix {
                rows,
                cols,
                rank,
                q: initial_q(name, cols, rank, &device),
                error: None,
                m: None,
                p: None,
            });
            let mut m = grad.reshape([rows, cols]);
            if let Some(error) = matrix.error.take() {
                m = m + error;
            }
            let p = m.clone().matmul(matrix.q.clone());
            matrix.m = Some(m);
            taken.grad = Some(p.reshape([rows * rank]));
        }
    }

    /// Between the rounds: orthonormalises each averaged P (taken out of `averaged`) and
    /// gives the second round's gradients, Q = Mᵀ P for each compressed matrix.
    pub(super) fn transpose_project<A: AutodiffBackend<InnerBackend = B>>(
        &mut self,
        averaged: &mut BTreeMap<String, Tensor<B, 1>>,
    ) -> BTreeMap<String, Taken<A>> {
        let mut second = BTreeMap::new();
        for (name, len) in &self.compressed {
            let Some(matrix) = self.matrices.get_mut(name) else {
                continue;
            };
            let mut entry = Taken {
                len: *len,
                matrix: None,
                device: matrix.q.device(),
                grad: None,
            };
            if let (Some(m), Some(p)) = (&matrix.m, averaged.remove(name)) {
                let p = orthonormalise(p.reshape([matrix.rows, matrix.rank]));
                // Qᵀ = Pᵀ M: the large operand read as it lies, not transposed.
                let q = p.clone().transpose().matmul(m.clone()).transpose();
                entry.grad = Some(q.reshape([*len]));
                matrix.p = Some(p);
            }
            second.insert(name.clone(), entry);
        }
        second
    }

    /// After the second round: each compressed gradient's approximation P Qᵀ (from the
    /// averaged Q taken out of `round_two`) goes into `averaged` under its name, Q is kept
    /// for the next step, and this rank keeps its error M − P Qᵀ.
    pub(super) fn reconstruct(
        &mut self,
        round_two: &mut BTreeMap<String, Tensor<B, 1>>,
        averaged: &mut BTreeMap<String, Tensor<B, 1>>,
    ) {
        for (name, _) in &self.compressed {
            let (Some(matrix), Some(q)) = (self.matrices.get_mut(name), round_two.remove(name))
            else {
                continue;
            };
            let q = q.reshape([matrix.cols, matrix.rank]);
            matrix.q = q.clone();
            let (Some(m), Some(p)) = (matrix.m.take(), matrix.p.take()) else {
                continue;
            };
            let approximation = p.matmul(q.transpose());
            matrix.error = Some(m - approximation.clone());
            averaged.insert(
                name.clone(),
                approximation.reshape([matrix.rows * matrix.cols]),
            );
        }
    }
}

/// `p`'s columns made orthonormal in order (classical Gram-Schmidt, as PyTorch's hook does
/// for its small ranks); a column that is all zeros stays so.
fn orthonormalise<B: Backend>(p: Tensor<B, 2>) -> Tensor<B, 2> {
    let [_, rank] = p.dims();
    let mut columns: Vec<Tensor<B, 2>> = Vec::with_capacity(rank);
    for i in 0..rank {
        let mut column = p.clone().narrow(1, i, 1);
        for done in &columns {
            let along = (done.clone() * column.clone()).sum().reshape([1, 1]);
            column = column - done.clone() * along;
        }
        let norm = (column.clone() * column.clone())
            .sum()
            .sqrt()
            .reshape([1, 1]);
        columns.push(column / (norm + 1e-8));
    }
    Tensor::cat(columns, 1)
}

/// The first Q of matrix `name` (n × r): standard normal values drawn from a generator
/// seeded by the name, so that every rank starts from the same Q without exchanging it.
fn initial_q<B: Backend>(name: &str, cols: usize, rank: usize, device: &B::Device) -> Tensor<B, 2> {
    let mut state = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut uniform = move || {
        // splitmix64: a full-period 64-bit generator, then 53 bits in (0, 1).
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + f64::EPSILON
    };
    let values: Vec<f32> = (0..cols * rank)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect();
    Tensor::from_data(TensorData::new(values, [cols, rank]), device)
}

#[cfg(test)]
mod tests;
