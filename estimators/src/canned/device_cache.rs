//! The canned estimators' training table kept on the device: uploaded once by `to_device`
//! and gathered per step (see `estimator::device_cache`).

use burn::tensor::backend::Backend;
use datasets::{ColumnarBatch, Labels};
use estimator::device_cache::{GatherInput, GatherRows, RowIndices};
use estimator::{Error, Estimator, Result};

use super::{CannedBatch, CannedEstimator, Task};
use crate::network::{BaselineNetwork, DnnNetwork, LinearNetwork, Network, WideDeepNetwork};

impl<B: Backend, I: GatherRows<B>> GatherRows<B> for CannedBatch<B, I> {
    fn gather_rows(&self, rows: &RowIndices<B>) -> Self {
        CannedBatch {
            inputs: self.inputs.gather_rows(rows),
            labels: self.labels.gather_rows(rows),
        }
    }
}

/// How many values (floats and ids) a network's device inputs hold per example: what sizes
/// a table of examples on the device.
pub trait InputValues {
    /// Values per example in the inputs `Network::inputs` builds.
    fn input_values(&self) -> usize;
}

impl InputValues for DnnNetwork {
    fn input_values(&self) -> usize {
        // The dense matrix, and at most one id per column.
        self.columns.dense_width() + self.columns.columns().len()
    }
}

impl InputValues for LinearNetwork {
    fn input_values(&self) -> usize {
        self.columns.dense_width() + self.columns.columns().len()
    }
}

impl InputValues for WideDeepNetwork {
    fn input_values(&self) -> usize {
        self.linear.input_values() + self.dnn.input_values()
    }
}

impl InputValues for BaselineNetwork {
    fn input_values(&self) -> usize {
        0
    }
}

impl<N, K> GatherInput for CannedEstimator<N, K>
where
    N: Network + InputValues + 'static,
    K: Task + 'static,
{
    type Table<B: Backend> = CannedBatch<B, N::Inputs<B>>;

    /// The table's `to_device`: the host work per row (vocabulary and hash lookups) is done
    /// once for the whole run instead of once a batch.
    fn upload<B: Backend>(
        &self,
        table: &ColumnarBatch,
        device: &B::Device,
    ) -> Result<Self::Table<B>> {
        self.to_device(table, device)
    }

    fn gather<B: Backend>(
        &self,
        table: &Self::Table<B>,
        rows: &RowIndices<B>,
    ) -> Result<Self::DeviceBatch<B>> {
        Ok(table.gather_rows(rows))
    }

    fn host_rows(&self, table: &ColumnarBatch, rows: &[u32]) -> Result<ColumnarBatch> {
        table
            .gather(rows)
            .map_err(|e| Error::Config(format!("device-cached input: {e}")))
    }

    fn table_rows(&self, table: &ColumnarBatch) -> usize {
        table.rows
    }

    /// 8 bytes a value: the numeric values copied up, the inputs made of them, the label
    /// and the weight (CUDA keeps ids and floats in 4 bytes, so this is twice enough).
    fn table_bytes(&self, table: &ColumnarBatch) -> u64 {
        let labels = match table.labels {
            Labels::None => 0,
            _ => 2,
        };
        let per_row = table.dense_width + self.network().input_values() + labels;
        (table.rows as u64).saturating_mul(8 * per_row as u64)
    }
}
