//! The optimizer the `train` flags describe: algorithm and rate, schedule, clipping,
//! regularisation.

use estimator::optimizer::{Clipping, Regularization, Schedule};
use estimator::OptimizerSpec;

use crate::flag_names::OptimizerName;
use crate::train_args::TrainArgs;

/// The optimizer of `args`.
pub fn optimizer_spec(args: &TrainArgs) -> OptimizerSpec {
    let name = args.optimizer.unwrap_or(OptimizerName::Adagrad);
    optimizer(name, args.learning_rate)
        .with_schedule(schedule(args))
        .with_clipping(Clipping {
            global_norm: args.clip_global_norm,
            norm: args.clip_norm,
            value: args.clip_value,
        })
        .with_regularization(Regularization {
            l1: args.l1_regularization,
            l2: args.l2_regularization,
        })
}

fn optimizer(name: OptimizerName, learning_rate: Option<f64>) -> OptimizerSpec {
    match name {
        OptimizerName::Adam => OptimizerSpec::adam(learning_rate.unwrap_or(0.001)),
        OptimizerName::Adagrad => OptimizerSpec::adagrad(learning_rate.unwrap_or(0.05)),
        OptimizerName::Sgd => OptimizerSpec::sgd(learning_rate.unwrap_or(0.01)),
        OptimizerName::Ftrl => OptimizerSpec::ftrl(learning_rate.unwrap_or(0.1)),
        OptimizerName::Rmsprop => OptimizerSpec::rmsprop(learning_rate.unwrap_or(0.001)),
        OptimizerName::Adamw => OptimizerSpec::adamw(learning_rate.unwrap_or(0.001)),
    }
}

/// The learning-rate schedule the flags describe (constant without them).
fn schedule(args: &TrainArgs) -> Schedule {
    Schedule::decay(args.learning_rate_schedule.clone().unwrap_or_default())
        .with_warmup_steps(args.warmup_steps)
        .with_scale_by_sync_replicas(args.scale_learning_rate_by_replicas)
}
