//! Why a CUDA device cannot be used; apart from the probe so that `error.rs` can hold it
//! without an import cycle.

use std::fmt;

/// Why CUDA, or one CUDA device, cannot be used here; carried by
/// [`Error::Device`](crate::Error::Device) with the device's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaFault {
    /// This binary was built without the `cuda` feature.
    NotBuilt,
    /// The driver library (`libcuda.so`) cannot be loaded.
    NoDriver,
    /// The driver loaded but did not start.
    DriverStart(String),
    /// The driver started but cannot count the devices.
    DeviceCount(String),
    /// NVRTC (`libnvrtc.so`, which compiles the kernels) cannot be loaded.
    NoNvrtc,
    /// NVRTC loaded but cannot compile a kernel (its log, on one line).
    Nvrtc(String),
    /// The device index is beyond the devices this process sees.
    NotVisible {
        /// The devices this process sees.
        visible: usize,
    },
}

impl fmt::Display for CudaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaFault::NotBuilt => write!(f, "this binary was built without the `cuda` feature"),
            CudaFault::NoDriver => write!(
                f,
                "the CUDA driver library (libcuda.so) cannot be loaded: no NVIDIA driver here, \
                 or, in a container, no NVIDIA container runtime"
            ),
            CudaFault::DriverStart(message) => {
                write!(f, "the CUDA driver did not start: {message}")
            }
            CudaFault::DeviceCount(message) => {
                write!(f, "the CUDA driver cannot count the devices: {message}")
            }
            CudaFault::NoNvrtc => write!(
                f,
                "NVRTC (libnvrtc.so, which compiles the CUDA kernels) cannot be loaded: put \
                 the CUDA toolkit's library directory on LD_LIBRARY_PATH"
            ),
            CudaFault::Nvrtc(log) => write!(f, "NVRTC cannot compile a kernel: {log}"),
            CudaFault::NotVisible { visible } => write!(
                f,
                "this process sees {visible} CUDA device(s) (CUDA_VISIBLE_DEVICES decides \
                 which devices are visible)"
            ),
        }
    }
}
