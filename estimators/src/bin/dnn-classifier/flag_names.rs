//! The named choices `train`'s flags take: optimizers, ps modes, exporters, loss reductions.

use clap::ValueEnum;

/// Optimizers selectable from the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OptimizerName {
    /// Adam.
    Adam,
    /// Adagrad (TF's DNNClassifier default).
    Adagrad,
    /// Plain SGD.
    Sgd,
    /// FTRL-Proximal (TF's linear-model default), with TF's defaults.
    Ftrl,
    /// RMSprop, with TF's defaults.
    Rmsprop,
    /// AdamW (decoupled weight decay 0.004), with TF's defaults.
    Adamw,
}

/// How ps tasks apply gradients.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PsModeName {
    /// On arrival (TF's default).
    Async,
    /// Averaged per step (TF's SyncReplicasOptimizer).
    Sync,
}

/// Exporters of train-and-evaluate.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ExporterName {
    /// After every evaluation (keeps 5).
    Latest,
    /// When the evaluation loss is the lowest so far.
    Best,
    /// Once, after the last evaluation.
    Final,
}

/// TF's names of a loss reduction.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LossReductionName {
    /// The weighted sum over the batch size (TF's default).
    #[value(name = "sum_over_batch_size")]
    SumOverBatchSize,
    /// The weighted sum.
    Sum,
}

impl From<LossReductionName> for estimator::LossReduction {
    fn from(name: LossReductionName) -> Self {
        match name {
            LossReductionName::SumOverBatchSize => estimator::LossReduction::SumOverBatchSize,
            LossReductionName::Sum => estimator::LossReduction::Sum,
        }
    }
}
