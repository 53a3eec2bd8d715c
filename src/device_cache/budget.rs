//! How much device memory a cached training table may take, and whether one fits.

use std::fmt;

use crate::device::ResolvedDevice;
use crate::error::Result;
use crate::estimator::RunConfig;

/// The share of a GPU's memory a cached table may take by default: the rest is the
/// model's, its optimizer's and the steps' (Keras leaves such choices to the user; a
/// quarter keeps MNIST-sized tables, 180 MB, far inside an 80 GB card's room).
const DEFAULT_SHARE: u64 = 4;

/// Bytes of device memory a cached training table may take under `config`:
/// [`RunConfig::device_cache_bytes`] when set (0: never); else a quarter of the device's
/// memory on CUDA and 0 on the CPU, where there is no upload to save.
pub fn device_cache_budget(config: &RunConfig) -> Result<u64> {
    if let Some(bytes) = config.device_cache_bytes {
        return Ok(bytes);
    }
    Ok(match config.device.resolve()? {
        ResolvedDevice::Cpu => 0,
        ResolvedDevice::Cuda(index) => cuda_memory(index) / DEFAULT_SHARE,
    })
}

/// The memory of CUDA device `index`; 0 (no cache) when the driver cannot say.
#[cfg(feature = "cuda")]
fn cuda_memory(index: usize) -> u64 {
    // The device's primary context: the one the backend computes in, so nothing new.
    match cudarc::driver::CudaContext::new(index).and_then(|c| c.total_mem()) {
        Ok(bytes) => bytes as u64,
        Err(e) => {
            tracing::warn!("cuda:{index}: device memory unknown ({e}): no device cache");
            0
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_memory(_index: usize) -> u64 {
    0
}

/// A cached table against the device cache budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePlan {
    /// Rows in the table.
    pub rows: usize,
    /// Bytes it takes on the device (estimated from above).
    pub bytes: u64,
    /// Bytes it may take ([`device_cache_budget`]).
    pub budget: u64,
}

impl CachePlan {
    /// Whether the table goes to the device: a budget, and the table within it.
    pub fn fits(&self) -> bool {
        self.budget > 0 && self.bytes <= self.budget
    }
}

impl fmt::Display for CachePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        write!(
            f,
            "training table of {} rows ({:.1} MiB on the device), device cache budget {:.1} MiB",
            self.rows,
            mib(self.bytes),
            mib(self.budget)
        )
    }
}
