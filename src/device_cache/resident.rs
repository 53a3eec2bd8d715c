//! The tables a [`DeviceCached`](super::DeviceCached) estimator uploaded: one per device,
//! each on the device stream of the training loop that uploaded it.

use std::any::Any;
use std::sync::Mutex;

use burn::tensor::backend::Backend;
use cubecl_common::stream_id::StreamId;

use crate::device::in_host_memory;
use crate::error::Result;

/// Uploaded tables, of any backend; at most one per device.
#[derive(Default)]
pub(super) struct Resident {
    // Type-erased: the estimator's methods are generic over the backend, so the tables of
    // each backend and device it trained on share one list.
    tables: Mutex<Vec<Box<dyn Any + Send>>>,
}

/// Where the table is for one device: `None` when it stayed on the host.
struct Entry<B: Backend, T> {
    device: B::Device,
    stream: Option<StreamId>,
    table: Option<T>,
}

impl Resident {
    /// `gather` on the table of `device`, decided by `place` the first time this device is
    /// asked for (`Some`: uploaded; `None`: it stays on the host), and `gather`'s `None`
    /// argument when it stayed on the host.
    ///
    /// A later training loop (another thread, so another device stream) places it again,
    /// dropping the earlier upload: tensors are made and read on the loop's own stream, as
    /// every batch is (`run_loop/device_input.rs`), since cubecl orders a read from another
    /// stream only partly.
    pub fn with<B, T, R>(
        &self,
        device: &B::Device,
        place: impl FnOnce() -> Result<Option<T>>,
        gather: impl FnOnce(Option<&T>) -> R,
    ) -> Result<R>
    where
        B: Backend,
        T: Send + 'static,
    {
        // On the CPU there is no stream to keep to: every thread shares one copy.
        let stream = (!in_host_memory::<B>(device)).then(StreamId::current);
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let found = tables.iter().position(|entry| {
            entry
                .downcast_ref::<Entry<B, T>>()
                .is_some_and(|e| e.device == *device)
        });
        let index = match found {
            Some(i) if entry_of::<B, T>(tables[i].as_ref()).stream == stream => i,
            stale => {
                if let Some(i) = stale {
                    tables.swap_remove(i);
                }
                let table = place()?;
                tables.push(Box::new(Entry::<B, T> {
                    device: device.clone(),
                    stream,
                    table,
                }));
                tables.len() - 1
            }
        };
        let entry = entry_of::<B, T>(tables[index].as_ref());
        Ok(gather(entry.table.as_ref()))
    }

    /// Drops every upload.
    pub fn clear(&self) {
        self.tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

fn entry_of<B: Backend, T: 'static>(entry: &(dyn Any + Send)) -> &Entry<B, T> {
    entry
        .downcast_ref()
        .expect("entries are looked up by their type")
}
