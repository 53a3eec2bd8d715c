//! Device selection and the backends the provided methods run on.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod cpu_threads;
#[cfg(any(feature = "cuda", test))]
mod kernel_cache;

pub(crate) use cpu_threads::{cpu_pool, cpu_threads, with_cpu_threads};

/// The CPU backend every provided method uses by default.
///
/// `Flex` was measured faster than `NdArray` on the DNN training step (see BENCHMARKS.md).
pub type CpuBackend = burn::backend::Flex;

/// The CPU backend with automatic differentiation, used for training.
pub type CpuTrainBackend = burn::backend::Autodiff<CpuBackend>;

/// The CUDA backend (with the `cuda` feature).
#[cfg(feature = "cuda")]
pub type CudaBackend = burn::backend::Cuda;

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
                let visible = visible_cuda_devices()
                    .map_err(|reason| Error::Config(format!("device cuda:{index}: {reason}")))?;
                if index >= visible {
                    return Err(Error::Config(format!(
                        "device cuda:{index}: this process sees {visible} CUDA device(s) \
                         (CUDA_VISIBLE_DEVICES decides which devices are visible)"
                    )));
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
                let visible = visible_cuda_devices().map_err(Error::Config)?;
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

/// The CUDA devices the driver shows this process (it applies `CUDA_VISIBLE_DEVICES`), or
/// why CUDA cannot be used. Asks the driver directly: Burn's count opens a context on the
/// first device, which fails (and panics) when none is visible.
fn visible_cuda_devices() -> std::result::Result<usize, String> {
    if let Some(reason) = cuda_unavailable_reason() {
        return Err(reason);
    }
    cuda_driver_device_count()
}

#[cfg(feature = "cuda")]
fn cuda_driver_device_count() -> std::result::Result<usize, String> {
    use cudarc::driver::result;
    match result::init() {
        Ok(()) => {}
        // What the driver says when CUDA_VISIBLE_DEVICES hides every device.
        Err(e) if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => return Ok(0),
        Err(e) => return Err(format!("the CUDA driver did not start: {e}")),
    }
    let count = result::device::get_count().map_err(|e| format!("CUDA driver: {e}"))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

#[cfg(not(feature = "cuda"))]
fn cuda_driver_device_count() -> std::result::Result<usize, String> {
    Ok(0)
}

/// Why CUDA cannot be used here, or `None` when it can.
///
/// cubecl panics when `libcuda.so` cannot be loaded, so the driver library is probed first.
fn cuda_unavailable_reason() -> Option<String> {
    if !cfg!(feature = "cuda") {
        return Some("this binary was built without the `cuda` feature".into());
    }
    let candidates = ["libcuda.so.1", "libcuda.so"];
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/lib64/stubs",
        "/usr/lib/wsl/lib",
        "/usr/local/nvidia/lib64",
    ];
    let found = dirs
        .iter()
        .flat_map(|d| {
            candidates
                .iter()
                .map(move |c| std::path::Path::new(d).join(c))
        })
        .any(|p| p.exists());
    if found {
        None
    } else {
        Some("no CUDA driver library (libcuda.so) found".into())
    }
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
