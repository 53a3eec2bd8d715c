//! Device selection and the backends the provided methods run on.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
            DeviceSpec::Cuda(index) => match cuda_unavailable_reason() {
                None => Ok(ResolvedDevice::Cuda(index)),
                Some(reason) => Err(Error::Config(format!("device cuda:{index}: {reason}"))),
            },
            DeviceSpec::Auto => match cuda_unavailable_reason() {
                None => Ok(ResolvedDevice::Cuda(0)),
                Some(reason) => {
                    tracing::info!("device auto: using the CPU ({reason})");
                    Ok(ResolvedDevice::Cpu)
                }
            },
        }
    }
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
