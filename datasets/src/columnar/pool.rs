//! Buffers handed from dropped batches back to the stage that fills them.

use std::sync::{Arc, Mutex};

use super::{Labels, StringColumn};

/// Sets of buffers kept for reuse. A pipeline holds a few batches at once (the one being
/// filled, those queued by `prefetch`, the one the caller uses), so a few suffice; more
/// would only hold memory.
const KEEP: usize = 8;

/// A batch's buffers: its dense values, categorical columns and labels.
pub(super) type Buffers = (Vec<f32>, Vec<StringColumn>, Labels);

/// A shared stack of batch buffers: `batch_columnar` takes from it, batches give back to
/// it when dropped, possibly on another thread.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recycler {
    free: Arc<Mutex<Vec<Buffers>>>,
}

impl Recycler {
    /// Recycled buffers when there are some, else empty ones.
    pub(super) fn take(&self) -> Buffers {
        // A poisoned lock only means a thread panicked while pushing a buffer: the stack
        // is still a valid stack.
        let buffers = match self.free.lock() {
            Ok(mut free) => free.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        buffers.unwrap_or_default()
    }

    pub(crate) fn give(&self, dense: Vec<f32>, categorical: Vec<StringColumn>, labels: Labels) {
        if dense.capacity() == 0 && categorical.is_empty() {
            return;
        }
        let mut free = match self.free.lock() {
            Ok(free) => free,
            Err(poisoned) => poisoned.into_inner(),
        };
        if free.len() < KEEP {
            free.push((dense, categorical, labels));
        }
    }

    /// Buffer sets waiting for reuse.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.free.lock().map_or(0, |free| free.len())
    }
}
