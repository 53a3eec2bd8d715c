//! [`Inputs`]: a request's rows, as JSON instances or as tensors of the signature's inputs.

use std::borrow::Cow;

use estimator::export::{DType, InputTensors, Instance, ServingTensor};

/// A request's rows: JSON instances (checked against the signature when predicted), or a
/// tensor per input (already of each input's type and shape).
#[derive(Debug, Clone)]
pub enum Inputs {
    /// One object of input name → value per row.
    Instances(Vec<Instance>),
    /// One tensor per input, the batch first.
    Tensors(InputTensors),
}

impl Inputs {
    /// Rows it holds.
    pub fn len(&self) -> usize {
        match self {
            Inputs::Instances(instances) => instances.len(),
            Inputs::Tensors(tensors) => tensors.batch(),
        }
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows as instances: tensors are cut into them.
    pub fn instances(&self) -> Cow<'_, [Instance]> {
        match self {
            Inputs::Instances(instances) => Cow::Borrowed(instances),
            Inputs::Tensors(tensors) => Cow::Owned(tensors.instances()),
        }
    }

    /// The rows as instances, taken: tensors are cut into them.
    pub fn into_instances(self) -> Vec<Instance> {
        match self {
            Inputs::Instances(instances) => instances,
            Inputs::Tensors(tensors) => tensors.instances(),
        }
    }

    /// Whether its rows can join `other`'s in one prediction: both instances, or both
    /// tensors of the same inputs.
    pub(crate) fn joins(&self, other: &Inputs) -> bool {
        match (self, other) {
            (Inputs::Instances(_), Inputs::Instances(_)) => true,
            (Inputs::Tensors(a), Inputs::Tensors(b)) => a.iter().map(row).eq(b.iter().map(row)),
            _ => false,
        }
    }

    /// The rows of `all`, one after another, as one; `None` unless they can all join.
    pub(crate) fn concat(all: &[&Inputs]) -> Option<Inputs> {
        let instances = all.iter().map(|inputs| match inputs {
            Inputs::Instances(instances) => Some(instances.as_slice()),
            Inputs::Tensors(_) => None,
        });
        if let Some(parts) = instances.collect::<Option<Vec<_>>>() {
            return Some(Inputs::Instances(parts.concat()));
        }
        let tensors = all.iter().map(|inputs| match inputs {
            Inputs::Tensors(tensors) => Some(tensors),
            Inputs::Instances(_) => None,
        });
        InputTensors::concat(&tensors.collect::<Option<Vec<_>>>()?).map(Inputs::Tensors)
    }
}

/// An input's name, and the shape and type of its rows.
fn row<'a>((name, tensor): (&'a str, &'a ServingTensor)) -> (&'a str, &'a [usize], DType) {
    (name, &tensor.shape[1..], tensor.elements.dtype())
}
