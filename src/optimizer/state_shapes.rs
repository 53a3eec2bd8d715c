//! The rank and tensor shapes of a parameter's optimizer state, to check a restored state
//! against its parameter before a step meets it: Burn panics on a state of another rank
//! ("Unsupported state dimension"), and an elementwise update panics on, or broadcasts, one
//! of another shape.

use burn::optim::record::{AdaptorRecord, AdaptorRecordV1};
use burn::optim::SgdState;
use burn::record::{FullPrecisionSettings, Record};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

use super::row_blocks::StateRecord;
use super::{AdagradState, AdamWState, AnyState, FtrlState, RmspropState};

/// State whose tensors have shapes.
trait Shapes {
    /// Pushes the shape of each tensor it holds.
    fn shapes(&self, into: &mut Vec<Vec<usize>>);
}

impl<B: Backend, const D: usize> Shapes for Tensor<B, D> {
    fn shapes(&self, into: &mut Vec<Vec<usize>>) {
        into.push(self.dims().to_vec());
    }
}

impl<T: Shapes> Shapes for Option<T> {
    fn shapes(&self, into: &mut Vec<Vec<usize>>) {
        if let Some(state) = self {
            state.shapes(into);
        }
    }
}

macro_rules! shapes {
    ($state:ident { $($field:ident),* }) => {
        impl<B: Backend, const D: usize> Shapes for $state<B, D> {
            fn shapes(&self, into: &mut Vec<Vec<usize>>) {
                $(self.$field.shapes(into);)*
            }
        }
    };
}

shapes!(AdamWState { first, second });
shapes!(AdagradState { accumulator });
shapes!(RmspropState {
    velocity,
    average,
    moment
});
shapes!(FtrlState {
    accumulator,
    linear
});

/// Burn's momentum keeps its velocity private: it is read through the record (a copy,
/// which a check at restore time can afford).
impl<B: Backend, const D: usize> Shapes for SgdState<B, D> {
    fn shapes(&self, into: &mut Vec<Vec<usize>>) {
        if let Some(momentum) = &self.momentum {
            let item = momentum.clone().into_item::<FullPrecisionSettings>();
            Tensor::<B, D>::from_item(item.velocity, &Default::default()).shapes(into);
        }
    }
}

impl<B: Backend, const D: usize> Shapes for AnyState<B, D> {
    fn shapes(&self, into: &mut Vec<Vec<usize>>) {
        match self {
            AnyState::Sgd(s) => s.shapes(into),
            AnyState::AdamW(s) => s.shapes(into),
            AnyState::Adagrad(s) => s.shapes(into),
            AnyState::Rmsprop(s) => s.shapes(into),
            AnyState::Ftrl(s) => s.shapes(into),
        }
    }
}

/// The rank of the parameter `record` is the state of, and the shapes of its tensors (none
/// for SGD without momentum).
fn rank_and_shapes<B: AutodiffBackend>(record: &StateRecord<B>) -> (usize, Vec<Vec<usize>>) {
    let mut shapes = Vec::new();
    macro_rules! ranks {
        ($($rank:ident => $d:literal),*) => {
            match record {
                $(AdaptorRecord::V1(AdaptorRecordV1::$rank(state)) => {
                    state.shapes(&mut shapes);
                    $d
                })*
            }
        };
    }
    let rank = ranks!(Rank0 => 0, Rank1 => 1, Rank2 => 2, Rank3 => 3, Rank4 => 4, Rank5 => 5,
        Rank6 => 6, Rank7 => 7, Rank8 => 8);
    (rank, shapes)
}

/// What is wrong with `record` as the state of the parameter `path` of shape `shape`, if
/// anything: a tensor of another shape, or (holding none) another rank.
pub(super) fn shape_fault<B: AutodiffBackend>(
    path: &str,
    record: &StateRecord<B>,
    shape: &[usize],
) -> Option<String> {
    let (rank, shapes) = rank_and_shapes::<B>(record);
    if let Some(other) = shapes.iter().find(|s| s.as_slice() != shape) {
        return Some(format!(
            "the optimizer state of '{path}' has shape {other:?}, but the parameter has shape \
             {shape:?}"
        ));
    }
    (rank != shape.len()).then(|| {
        format!(
            "the optimizer state of '{path}' is for a parameter of rank {rank}, but the \
             parameter has shape {shape:?}"
        )
    })
}
