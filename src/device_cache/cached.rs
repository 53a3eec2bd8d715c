//! [`DeviceCached`]: an estimator whose training table stays on the device, each step's
//! batch gathered there by row number.

use std::sync::Arc;

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::budget::{device_cache_budget, CachePlan};
use super::resident::Resident;
use super::{CachedBatch, GatherInput, RowIndices};
use crate::error::{Error, Result};
use crate::estimator::{Estimator, LossReduction, RunConfig};
use crate::export::Signature;
use crate::metrics::Metrics;
use crate::optimizer::OptimizerSpec;

/// `E` training on a table it keeps on the device: the input yields
/// [`CachedBatch::Rows`] (row numbers, from the same pipeline the rows would go through:
/// `table_indices(rows).shuffle(…).repeat(…).batch(…)`), and each becomes a device batch
/// gathered from the table uploaded once, so a step sends its row numbers to the device
/// instead of its rows. A table beyond [`RunConfig::device_cache_bytes`] stays on the host
/// and its rows are uploaded per batch, as `E`'s own input would be.
///
/// Everything else is `E`'s: the model, the loss, the checkpoints, the saved configuration
/// (`estimator.json` is `E`'s, so `evaluate`, `predict` and exports load `E`). The table
/// stays on a device until the next training loop on it, [`release`](Self::release) or
/// the drop of this value.
pub struct DeviceCached<E: GatherInput> {
    estimator: E,
    table: Option<Arc<E::Batch>>,
    resident: Resident,
}

impl<E: GatherInput> DeviceCached<E> {
    /// `estimator` without a table: its input yields [`CachedBatch::Batch`] only.
    pub fn new(estimator: E) -> Self {
        Self {
            estimator,
            table: None,
            resident: Resident::default(),
        }
    }

    /// Keeps `table` (every row of the training input, as one host batch) for the
    /// [`CachedBatch::Rows`] batches to pick from.
    pub fn with_table(mut self, table: impl Into<Arc<E::Batch>>) -> Self {
        self.table = Some(table.into());
        self.resident.clear();
        self
    }

    /// The estimator.
    pub fn estimator(&self) -> &E {
        &self.estimator
    }

    /// The estimator, without the table.
    pub fn into_inner(self) -> E {
        self.estimator
    }

    /// The table, when one was given.
    pub fn table(&self) -> Option<&E::Batch> {
        self.table.as_deref()
    }

    /// The table against this run's device cache budget: whether training will keep it on
    /// the device. `None` without a table.
    pub fn plan(&self) -> Result<Option<CachePlan>> {
        let Some(table) = &self.table else {
            return Ok(None);
        };
        Ok(Some(CachePlan {
            rows: self.estimator.table_rows(table),
            bytes: self.estimator.table_bytes(table),
            budget: device_cache_budget(self.estimator.run_config())?,
        }))
    }

    /// Frees the tables uploaded so far (the next training uploads again).
    pub fn release(&self) {
        self.resident.clear();
    }

    /// The device batch of `rows` of the table: gathered on the device, or on the host and
    /// uploaded when the table stays there.
    fn rows_to_device<B: Backend>(
        &self,
        rows: &[u32],
        device: &B::Device,
    ) -> Result<E::DeviceBatch<B>> {
        let table = self.table.as_deref().ok_or_else(|| {
            Error::Config("device-cached input yielded row numbers, but no table was given".into())
        })?;
        let len = self.estimator.table_rows(table);
        if let Some(row) = rows.iter().find(|&&r| r as usize >= len) {
            return Err(Error::Config(format!(
                "device-cached input: row {row} of a {len}-row table"
            )));
        }
        let place = || -> Result<Option<E::Table<B>>> {
            let plan = self.plan()?.expect("the table was given");
            if !plan.fits() {
                tracing::info!(
                    "{plan}: the table stays on the host; each batch is uploaded as it is made"
                );
                return Ok(None);
            }
            tracing::info!("{plan}: kept on the device; each step gathers its batch there");
            self.estimator.upload::<B>(table, device).map(Some)
        };
        let gather = |resident: Option<&E::Table<B>>| {
            resident.map(|t| self.estimator.gather(t, &RowIndices::new(rows, device)))
        };
        match self.resident.with::<B, _, _>(device, place, gather)? {
            Some(batch) => batch,
            None => {
                let batch = self.estimator.host_rows(table, rows)?;
                self.estimator.to_device(&batch, device)
            }
        }
    }
}

/// The estimator's own form: what is saved is `E`, whatever trains it.
impl<E: GatherInput> Serialize for DeviceCached<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.estimator.serialize(serializer)
    }
}

impl<'de, E: GatherInput> Deserialize<'de> for DeviceCached<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        E::deserialize(deserializer).map(Self::new)
    }
}

impl<E> Estimator for DeviceCached<E>
where
    E: GatherInput,
    E::Batch: Sync,
{
    type Model<B: Backend> = E::Model<B>;
    type Batch = CachedBatch<E::Batch>;
    type DeviceBatch<B: Backend> = E::DeviceBatch<B>;
    type Prediction = E::Prediction;

    fn run_config(&self) -> &RunConfig {
        self.estimator.run_config()
    }

    fn build_model<B: Backend>(&self, device: &B::Device) -> Self::Model<B> {
        self.estimator.build_model(device)
    }

    fn optimizer(&self) -> OptimizerSpec {
        self.estimator.optimizer()
    }

    fn to_device<B: Backend>(
        &self,
        batch: &Self::Batch,
        device: &B::Device,
    ) -> Result<Self::DeviceBatch<B>> {
        match batch {
            CachedBatch::Rows(rows) => self.rows_to_device(rows, device),
            CachedBatch::Batch(batch) => self.estimator.to_device(batch, device),
        }
    }

    fn loss<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Tensor<B, 1>> {
        self.estimator.loss(model, batch, device)
    }

    fn loss_reduction(&self) -> LossReduction {
        self.estimator.loss_reduction()
    }

    fn eval_metrics<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Metrics> {
        self.estimator.eval_metrics(model, batch, device)
    }

    fn predictions<B: Backend>(
        &self,
        model: &Self::Model<B>,
        batch: &Self::DeviceBatch<B>,
        device: &B::Device,
    ) -> Result<Vec<Self::Prediction>> {
        self.estimator.predictions(model, batch, device)
    }

    fn serving_signature(&self) -> Signature {
        self.estimator.serving_signature()
    }

    fn export_name() -> String {
        E::export_name()
    }
}
