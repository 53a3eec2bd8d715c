//! A parameter's optimizer state cut into blocks of rows and joined back, for parameter
//! servers that hold a large variable as blocks. Every rule's state is elementwise in its
//! parameter (moments, accumulators, velocities) apart from step counts, so the block of
//! rows of a variable has the same rows of its state, and updating the blocks apart is the
//! update of the whole.

use burn::optim::momentum::MomentumState;
use burn::optim::record::{AdaptorRecord, AdaptorRecordV1};
use burn::optim::SgdState;
use burn::record::{FullPrecisionSettings, Record};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

use super::{AdagradState, AdamWState, AnyOptimizer, AnyState, FtrlState, RmspropState};
use crate::error::{Error, Result};

/// State that cuts into consecutive blocks of rows (the first axis) and joins back.
trait RowBlocks: Sized {
    /// The blocks of `rows` rows each, in order.
    fn cut_rows(self, rows: &[usize]) -> Vec<Self>;

    /// The blocks, in order, joined.
    fn join_rows(blocks: Vec<Self>) -> Self;
}

impl<B: Backend, const D: usize> RowBlocks for Tensor<B, D> {
    fn cut_rows(self, rows: &[usize]) -> Vec<Self> {
        self.split_with_sizes(rows.to_vec(), 0)
    }

    fn join_rows(blocks: Vec<Self>) -> Self {
        Tensor::cat(blocks, 0)
    }
}

impl<T: RowBlocks> RowBlocks for Option<T> {
    fn cut_rows(self, rows: &[usize]) -> Vec<Self> {
        match self {
            Some(state) => state.cut_rows(rows).into_iter().map(Some).collect(),
            None => rows.iter().map(|_| None).collect(),
        }
    }

    fn join_rows(blocks: Vec<Self>) -> Self {
        let blocks: Option<Vec<T>> = blocks.into_iter().collect();
        blocks.map(T::join_rows)
    }
}

/// Cuts each field of a state struct into blocks, copies the others from the whole, and
/// joins the fields back (copied ones from the first block: every block takes each step).
macro_rules! row_blocks {
    ($state:ident { $($field:ident),* } $(copy { $($copied:ident),* })?) => {
        impl<B: Backend, const D: usize> RowBlocks for $state<B, D> {
            fn cut_rows(self, rows: &[usize]) -> Vec<Self> {
                $(let mut $field = self.$field.cut_rows(rows).into_iter();)*
                rows.iter()
                    .map(|_| $state {
                        $($field: $field.next().expect("one block per row count"),)*
                        $($($copied: self.$copied,)*)?
                    })
                    .collect()
            }

            fn join_rows(blocks: Vec<Self>) -> Self {
                $($(let $copied = blocks[0].$copied;)*)?
                $(let mut $field = Vec::with_capacity(blocks.len());)*
                for block in blocks {
                    $($field.push(block.$field);)*
                }
                $state {
                    $($field: RowBlocks::join_rows($field),)*
                    $($($copied,)*)?
                }
            }
        }
    };
}

row_blocks!(AdamWState { first, second } copy { steps });
row_blocks!(AdagradState { accumulator });
row_blocks!(RmspropState {
    velocity,
    average,
    moment
});
row_blocks!(FtrlState {
    accumulator,
    linear
});

/// Burn's momentum keeps its velocity private: it crosses through the record, which does
/// not, on the device the velocity is on.
impl<B: Backend, const D: usize> RowBlocks for SgdState<B, D> {
    fn cut_rows(self, rows: &[usize]) -> Vec<Self> {
        let velocity = self.momentum.map(|momentum| {
            let item = momentum.into_item::<FullPrecisionSettings>();
            Tensor::<B, D>::from_item(item.velocity, &Default::default())
        });
        velocity
            .cut_rows(rows)
            .into_iter()
            .map(|velocity| SgdState {
                momentum: velocity.map(MomentumState::new),
            })
            .collect()
    }

    fn join_rows(blocks: Vec<Self>) -> Self {
        let velocities = blocks.into_iter().map(|block| {
            block.momentum.map(|momentum| {
                let item = momentum.into_item::<FullPrecisionSettings>();
                Tensor::<B, D>::from_item(item.velocity, &Default::default())
            })
        });
        SgdState {
            momentum: RowBlocks::join_rows(velocities.collect::<Vec<_>>()).map(MomentumState::new),
        }
    }
}

impl<B: Backend, const D: usize> RowBlocks for AnyState<B, D> {
    fn cut_rows(self, rows: &[usize]) -> Vec<Self> {
        match self {
            AnyState::Sgd(s) => s.cut_rows(rows).into_iter().map(AnyState::Sgd).collect(),
            AnyState::AdamW(s) => s.cut_rows(rows).into_iter().map(AnyState::AdamW).collect(),
            AnyState::Adagrad(s) => s
                .cut_rows(rows)
                .into_iter()
                .map(AnyState::Adagrad)
                .collect(),
            AnyState::Rmsprop(s) => s
                .cut_rows(rows)
                .into_iter()
                .map(AnyState::Rmsprop)
                .collect(),
            AnyState::Ftrl(s) => s.cut_rows(rows).into_iter().map(AnyState::Ftrl).collect(),
        }
    }

    fn join_rows(blocks: Vec<Self>) -> Self {
        macro_rules! all {
            ($variant:ident, $first:expr, $rest:expr) => {{
                let mut states = vec![$first];
                for block in $rest {
                    match block {
                        AnyState::$variant(s) => states.push(s),
                        _ => unreachable!("blocks of one state share its rule"),
                    }
                }
                AnyState::$variant(RowBlocks::join_rows(states))
            }};
        }
        let mut rest = blocks.into_iter();
        match rest.next().expect("at least one block") {
            AnyState::Sgd(s) => all!(Sgd, s, rest),
            AnyState::AdamW(s) => all!(AdamW, s, rest),
            AnyState::Adagrad(s) => all!(Adagrad, s, rest),
            AnyState::Rmsprop(s) => all!(Rmsprop, s, rest),
            AnyState::Ftrl(s) => all!(Ftrl, s, rest),
        }
    }
}

/// A parameter's record, as the optimizer keeps it.
pub(super) type StateRecord<B> =
    AdaptorRecord<AnyOptimizer<<B as AutodiffBackend>::InnerBackend>, B>;

/// `record` cut into blocks of `rows` rows; `path` names it in the error of a scalar's.
pub(super) fn cut_record<B: AutodiffBackend>(
    path: &str,
    record: StateRecord<B>,
    rows: &[usize],
) -> Result<Vec<StateRecord<B>>> {
    macro_rules! ranks {
        ($($rank:ident => $d:literal),*) => {
            match record {
                $(AdaptorRecord::V1(AdaptorRecordV1::$rank(state)) => Ok(state
                    .cut_rows(rows)
                    .into_iter()
                    .map(AdaptorRecord::from_state::<$d>)
                    .collect()),)*
                AdaptorRecord::V1(AdaptorRecordV1::Rank0(_)) => Err(Error::Config(format!(
                    "the optimizer state of '{path}' is a scalar's: it has no rows to cut"
                ))),
            }
        };
    }
    ranks!(Rank1 => 1, Rank2 => 2, Rank3 => 3, Rank4 => 4, Rank5 => 5, Rank6 => 6, Rank7 => 7, Rank8 => 8)
}

/// The records of a parameter's blocks, in order, joined; `path` names it in the error of
/// blocks that do not belong together.
pub(super) fn join_records<B: AutodiffBackend>(
    path: &str,
    blocks: Vec<StateRecord<B>>,
) -> Result<StateRecord<B>> {
    let mismatch = || {
        Error::Config(format!(
            "the optimizer state of the blocks of '{path}' differs in rank"
        ))
    };
    macro_rules! ranks {
        ($($rank:ident => $d:literal),*) => {
            match blocks.first() {
                $(Some(AdaptorRecord::V1(AdaptorRecordV1::$rank(_))) => {
                    let states = blocks
                        .into_iter()
                        .map(|block| match block {
                            AdaptorRecord::V1(AdaptorRecordV1::$rank(state)) => Ok(state),
                            _ => Err(mismatch()),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(AdaptorRecord::from_state::<$d>(RowBlocks::join_rows(states)))
                })*
                _ => Err(mismatch()),
            }
        };
    }
    ranks!(Rank1 => 1, Rank2 => 2, Rank3 => 3, Rank4 => 4, Rank5 => 5, Rank6 => 6, Rank7 => 7, Rank8 => 8)
}

#[cfg(test)]
mod tests;
