//! Whether this process can train on CUDA: the driver library loads and shows devices, and
//! NVRTC (CUDA's runtime compiler, which compiles every kernel the backend runs) loads and
//! compiles a kernel. Asked once per process.
//!
//! cudarc loads both libraries on their first use and panics when it cannot, and the
//! backend would first use NVRTC in the middle of a training step. The first use happens
//! here instead, where a panic becomes a one-line reason. Loading NVRTC and compiling the
//! one-line kernel took 24 ms (NVRTC 13.0 on a 2-vCPU machine), once per process.

use std::sync::OnceLock;

use super::cuda_fault::CudaFault;

/// The CUDA devices the driver shows this process (it applies `CUDA_VISIBLE_DEVICES`), or
/// why CUDA cannot be used.
pub(super) fn visible_cuda_devices() -> Result<usize, CudaFault> {
    static PROBED: OnceLock<Result<usize, CudaFault>> = OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

#[cfg(not(feature = "cuda"))]
fn probe() -> Result<usize, CudaFault> {
    Err(CudaFault::NotBuilt)
}

#[cfg(feature = "cuda")]
fn probe() -> Result<usize, CudaFault> {
    let devices = without_panicking(driver_device_count).ok_or(CudaFault::NoDriver)??;
    if devices > 0 {
        const KERNEL: &str = "extern \"C\" __global__ void probe(float *x) { x[0] = 1.0f; }";
        without_panicking(|| cudarc::nvrtc::compile_ptx(KERNEL))
            .ok_or(CudaFault::NoNvrtc)?
            .map_err(|e| CudaFault::Nvrtc(compile_error(e)))?;
    }
    Ok(devices)
}

/// NVRTC's own log on one line when it wrote one (it names a missing builtins library).
#[cfg(feature = "cuda")]
fn compile_error(error: cudarc::nvrtc::CompileError) -> String {
    match error {
        cudarc::nvrtc::CompileError::CompileError { nvrtc, log, .. } => {
            let log = log.to_string_lossy();
            let log = log.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("{nvrtc:?}: {log}")
        }
        other => format!("{other:?}"),
    }
}

/// Asks the driver directly: Burn's count opens a context on the first device, which fails
/// (and panics) when none is visible.
#[cfg(feature = "cuda")]
fn driver_device_count() -> Result<usize, CudaFault> {
    use cudarc::driver::result;
    match result::init() {
        Ok(()) => {}
        // What the driver says when CUDA_VISIBLE_DEVICES hides every device.
        Err(e) if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => return Ok(0),
        Err(e) => return Err(CudaFault::DriverStart(e.to_string())),
    }
    let count = result::device::get_count().map_err(|e| CudaFault::DeviceCount(e.to_string()))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// `f`'s result, or `None` when it panics; the panic prints nothing. The hook is the
/// process's: another thread panicking meanwhile would print nothing either (it still
/// unwinds), which a window of one library load makes acceptable.
#[cfg(any(feature = "cuda", test))]
fn without_panicking<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(f);
    std::panic::set_hook(hook);
    result.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_panic_becomes_none_and_the_panic_hook_before_it_is_back_afterwards() {
        let here = std::thread::current().id();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |_| {
            if std::thread::current().id() == here {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }));

        assert_eq!(without_panicking(|| 7), Some(7));
        assert_eq!(without_panicking(|| -> u8 { panic!("no library") }), None);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the probe's panic reached the hook"
        );
        let after = std::panic::catch_unwind(|| panic!("a later panic"));

        std::panic::set_hook(default);
        assert!(after.is_err());
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the earlier hook was not restored"
        );
    }
}
