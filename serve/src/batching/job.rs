//! [`Job`]: what a request asks of the batching threads, and how it is answered, from a
//! merged prediction or from one of its own.

use estimator::export::Instance;

use crate::error::ServeError;
use crate::inputs::Inputs;
use crate::servable::{Outputs, OutputsAnswer, Predictions, Servable};

/// What a request asks of the batching threads, and where its answer goes.
pub(super) enum Job {
    /// Predictions for instances, as JSON.
    Instances(Vec<Instance>, Sender1<Predictions>),
    /// Output `keys` for inputs (a REST or gRPC call's), as tensors where the servable
    /// stacks them.
    Outputs {
        inputs: Inputs,
        keys: Vec<String>,
        reply: Sender1<OutputsAnswer>,
    },
}

pub(super) type Sender1<T> = tokio::sync::oneshot::Sender<T>;

impl Job {
    /// Rows it holds.
    pub(super) fn size(&self) -> usize {
        match self {
            Job::Instances(instances, _) => instances.len(),
            Job::Outputs { inputs, .. } => inputs.len(),
        }
    }

    /// Whether it can share a prediction with `other`: one of the same kind, asking the
    /// same outputs of inputs that join.
    pub(super) fn joins(&self, other: &Job) -> bool {
        match (self, other) {
            (Job::Instances(..), Job::Instances(..)) => true,
            (
                Job::Outputs { inputs, keys, .. },
                Job::Outputs {
                    inputs: other_inputs,
                    keys: other,
                    ..
                },
            ) => keys == other && inputs.joins(other_inputs),
            _ => false,
        }
    }

    /// Answers it with `error`.
    pub(super) fn refuse(self, error: ServeError) {
        match self {
            Job::Instances(_, reply) => drop(reply.send(Err(error))),
            Job::Outputs { reply, .. } => drop(reply.send(Err(error))),
        }
    }

    /// Answers it with its part of a merged prediction, made in the form its kind asks.
    pub(super) fn answer(self, part: Outputs) {
        match (self, part) {
            (Job::Instances(_, reply), Outputs::Json(part)) => drop(reply.send(Ok(part))),
            (Job::Outputs { reply, .. }, part) => drop(reply.send(Ok(part))),
            (job, _) => job.refuse(ServeError::Internal(
                "a merged prediction answered in another form than its requests asked".into(),
            )),
        }
    }

    /// Answers it from a prediction of its own.
    pub(super) fn run_alone(self, model: &dyn Servable) {
        match self {
            Job::Instances(instances, reply) => {
                let _ = reply.send(model.predict(&instances));
            }
            Job::Outputs {
                inputs,
                keys,
                reply,
            } => {
                let _ = reply.send(model.predict_outputs(&inputs, &keys));
            }
        }
    }
}
