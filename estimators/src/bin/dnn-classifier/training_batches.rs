//! How this task's training rows reach the device: kept there whole when they fit the
//! device cache budget (each step gathers its batch by row number), else batched on the
//! host and uploaded batch by batch. Either way the rows come in the same order, from the
//! same shuffle, and checkpoints record the same positions.

use std::sync::Arc;

use anyhow::Result;
use estimator::datasets::{
    table_indices, BoxDataset, ColumnarBatch, Dataset, DatasetExt, Error, Schema,
};
use estimator::device_cache::{device_cache_budget, CachedBatch, DeviceCached};
use estimator::Estimator;
use estimators::DnnClassifier;

use crate::input_format::InputFormat;
use crate::training_input::TrainingInput;

/// The classifier as training runs it, and the rows its input reads.
pub struct TrainingBatches<'a> {
    /// The classifier, holding the table when it goes to the device.
    pub cached: DeviceCached<DnnClassifier>,
    /// The rows in memory already, for the host's input to start from.
    table: Option<Arc<ColumnarBatch>>,
    rows: (&'a TrainingInput, &'a InputFormat, &'a Schema),
    /// Batch size, shuffle buffer and seed.
    shape: (usize, usize, u64),
}

impl<'a> TrainingBatches<'a> {
    /// Decides where the rows go: to the device when this task trains, the budget is not 0
    /// and they fit it (read whole first, unless `table` holds them already); else they
    /// stay on the host as before, saying so when they were too large.
    pub fn new(
        classifier: DnnClassifier,
        table: Option<Arc<ColumnarBatch>>,
        rows: (&'a TrainingInput, &'a InputFormat, &'a Schema),
        shape: (usize, usize, u64),
        trains: bool,
    ) -> Result<Self> {
        let on_host = |cached, table| TrainingBatches {
            cached,
            table,
            rows,
            shape,
        };
        if !trains || device_cache_budget(classifier.run_config())? == 0 {
            return Ok(on_host(DeviceCached::new(classifier), table));
        }
        let table = match table {
            Some(table) => table,
            None => Arc::new(read_table(rows)?),
        };
        let cached = DeviceCached::new(classifier).with_table(table.clone());
        let plan = cached.plan()?.expect("a table was given");
        if plan.fits() {
            return Ok(on_host(cached, None));
        }
        tracing::info!(
            "{plan} (--device-cache-bytes): the rows stay on the host, each batch uploaded \
             as it is made"
        );
        Ok(on_host(DeviceCached::new(cached.into_inner()), Some(table)))
    }

    /// This task's training batches: row numbers of the table on the device, or batches of
    /// the rows, cached in memory after the first epoch as one table whose rows are
    /// shuffled as handles and copied into reused columnar batches.
    pub fn input(&self) -> Result<BoxDataset<CachedBatch<ColumnarBatch>>, Error> {
        let (batch_size, buffer, seed) = self.shape;
        if let Some(table) = self.cached.table() {
            return Ok(table_indices(table.rows)
                .shuffle(buffer, seed)
                .repeat(None)
                .batch(batch_size, false)
                .map(CachedBatch::Rows)
                .boxed());
        }
        let (training_input, format, schema) = self.rows;
        let cached = training_input.rows(format, schema)?.cache_table();
        let cached = match &self.table {
            Some(table) => cached.with_table(table.clone()),
            None => cached,
        };
        Ok(cached
            .shuffle(buffer, seed)
            .repeat(None)
            .batch_columnar(batch_size, false)
            .prefetch(4)
            .map(CachedBatch::Batch)
            .boxed())
    }
}

/// Every row of this task's input, in the order the host's input reads them (for a resumed
/// run, whose statistics pass, which keeps them, did not run).
fn read_table(
    (training_input, format, schema): (&TrainingInput, &InputFormat, &Schema),
) -> Result<ColumnarBatch> {
    let mut rows = training_input.rows(format, schema)?;
    let mut table = ColumnarBatch::default();
    while let Some(row) = rows.next_item() {
        table.push(&row?)?;
    }
    table.shrink_to_fit();
    Ok(table)
}
