//! Device selection and the backends the provided methods run on.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod cpu_threads;
mod cuda_fault;
mod cuda_probe;
#[cfg(any(feature = "cuda", test))]
mod kernel_cache;

pub use cpu_threads::max_intra_op_threads;
pub(crate) use cpu_threads::{cpu_pool, cpu_threads, with_cpu_threads};
pub use cuda_fault::CudaFault;
use cuda_probe::visible_cuda_devices;

/// The CPU backend every provided method uses by default.
///
/// `Flex` was measured faster than `NdArray` on the DNN training step (see BENCHMARKS.md).
pub type CpuBackend = burn::backend::Flex;

/// The CPU backend with automatic differentiation, used for training.
pub type CpuTrainBackend = burn::backend::Autodiff<CpuBackend>;

/// The CUDA backend (with the `cuda` feature).
#[cfg(feature = "cuda")]
pub type CudaBackend = burn::backend::Cuda;

/// Whether backend `B` keeps tensors on `device` in host memory (Flex, NdArray), where a
/// tensor's data is read and made without a transfer.
pub(crate) fn in_host_memory<B: burn::tensor::backend::Backend>(device: &B::Device) -> bool {
    matches!(B::name(device).as_str(), "flex" | "ndarray")
}

/// Which device to compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSpec {
    /// The CPU (default).
    #[default]
    Cpu,
    /// CUDA device `n` (needs the `cuda` feature and a CUDA driver).
    Cuda(usize),
    /// CUDA device 0 when usable, else the CPU.
    Auto,
}

/// The device actually used once a [`DeviceSpec`] has been checked against this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedDevice {
    /// The CPU.
    Cpu,
    /// CUDA device `n`.
    Cuda(usize),
}

impl DeviceSpec {
    /// Checks the request against this build and machine; `Auto` falls back to the CPU.
    pub fn resolve(self) -> Result<ResolvedDevice> {
        match self {
            DeviceSpec::Cpu => Ok(ResolvedDevice::Cpu),
            DeviceSpec::Cuda(index) => {
                let visible =
                    visible_cuda_devices().map_err(|fault| Error::Device { index, fault })?;
                if index >= visible {
                    return Err(Error::Device {
                        index,
                        fault: CudaFault::NotVisible { visible },
                    });
                }
                Ok(cuda(index))
            }
            DeviceSpec::Auto => match visible_cuda_devices() {
                Ok(visible) if visible > 0 => Ok(cuda(0)),
                Ok(_) => {
                    tracing::info!("device auto: using the CPU (no CUDA device is visible)");
                    Ok(ResolvedDevice::Cpu)
                }
                Err(reason) => {
                    tracing::info!("device auto: using the CPU ({reason})");
                    Ok(ResolvedDevice::Cpu)
                }
            },
        }
    }

    /// How many devices of the resolved kind this process can train on, from the resolved
    /// one on: the visible CUDA devices from index `n` on for `cuda:n`, 1 on the CPU.
    pub fn devices_from_here(self) -> Result<usize> {
        match self.resolve()? {
            ResolvedDevice::Cpu => Ok(1),
            ResolvedDevice::Cuda(index) => {
                let visible =
                    visible_cuda_devices().map_err(|fault| Error::Device { index, fault })?;
                Ok(visible.saturating_sub(index))
            }
        }
    }
}

/// CUDA device `index`, with compiled kernels cached on disk from here on.
fn cuda(index: usize) -> ResolvedDevice {
    #[cfg(feature = "cuda")]
    kernel_cache::install();
    ResolvedDevice::Cuda(index)
}

#[cfg(all(test, not(feature = "cuda")))]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_one_device_and_cuda_without_the_feature_is_an_error_naming_it() {
        assert_eq!(DeviceSpec::Cpu.devices_from_here().unwrap(), 1);
        assert_eq!(DeviceSpec::Auto.devices_from_here().unwrap(), 1);
        let err = DeviceSpec::Cuda(1).devices_from_here().unwrap_err();
        assert!(err.to_string().contains("cuda:1"), "{err}");
    }
}
