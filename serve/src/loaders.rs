//! [`Loaders`]: which estimator types a server can load, by the type name an export records.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use estimator::device::ResolvedDevice;
use estimator::export::{ExportInfo, EXPORT_FILE};
use estimator::{CpuBackend, DeviceSpec};
use estimators::{
    BaselineClassifier, BaselineRegressor, DnnClassifier, DnnLinearCombinedClassifier,
    DnnLinearCombinedRegressor, DnnRegressor, LinearClassifier, LinearRegressor,
};

use crate::batching::{Batched, Batching};
use crate::servable::{Servable, ServableEstimator, Served};

type Load = fn(&Path, ResolvedDevice) -> estimator::Result<Arc<dyn Servable>>;

/// The estimator types a server loads, keyed by the type name in an export's
/// `export.json`.
#[derive(Clone)]
pub struct Loaders {
    by_type: BTreeMap<String, Load>,
    batching: Option<Batching>,
    device: DeviceSpec,
}

impl Loaders {
    /// Every canned estimator.
    pub fn canned() -> Self {
        Self {
            by_type: BTreeMap::new(),
            batching: None,
            device: DeviceSpec::Cpu,
        }
        .with::<DnnClassifier>()
        .with::<DnnRegressor>()
        .with::<LinearClassifier>()
        .with::<LinearRegressor>()
        .with::<DnnLinearCombinedClassifier>()
        .with::<DnnLinearCombinedRegressor>()
        .with::<BaselineClassifier>()
        .with::<BaselineRegressor>()
    }

    /// Also loads exports of `E` (a user's estimator).
    pub fn with<E: ServableEstimator>(mut self) -> Self {
        fn load<E: ServableEstimator>(
            dir: &Path,
            device: ResolvedDevice,
        ) -> estimator::Result<Arc<dyn Servable>> {
            match device {
                ResolvedDevice::Cpu => Ok(Arc::new(Served::<E, CpuBackend>::load_on(
                    dir,
                    Default::default(),
                )?)),
                #[cfg(feature = "cuda")]
                ResolvedDevice::Cuda(index) => Ok(Arc::new(Served::<
                    E,
                    estimator::device::CudaBackend,
                >::load_on(
                    dir,
                    burn::backend::cuda::CudaDevice::new(index),
                )?)),
                #[cfg(not(feature = "cuda"))]
                ResolvedDevice::Cuda(_) => Err(estimator::Error::Config(
                    "this server was built without the `cuda` feature".into(),
                )),
            }
        }
        self.by_type
            .insert(std::any::type_name::<E>().to_string(), load::<E>);
        self
    }

    /// Loads the versions onto `device` (the CPU by default).
    pub fn on(mut self, device: DeviceSpec) -> Self {
        self.device = device;
        self
    }

    /// Merges concurrent requests to each loaded version (server-side batching).
    pub fn with_batching(mut self, batching: Batching) -> Self {
        self.batching = Some(batching);
        self
    }

    /// Loads the export in `dir`; an error names the directory and, for an estimator type
    /// this server does not know, the type.
    pub fn load(&self, dir: &Path) -> Result<Arc<dyn Servable>, String> {
        let info_path = dir.join(EXPORT_FILE);
        let info: ExportInfo = std::fs::read(&info_path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", info_path.display()))?;
        let load = self.by_type.get(&info.estimator_type).ok_or_else(|| {
            format!(
                "{}: estimator type {} is not one this server loads",
                dir.display(),
                info.estimator_type
            )
        })?;
        let device = self
            .device
            .resolve()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let loaded = load(dir, device).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(match self.batching {
            Some(batching) => Arc::new(Batched::new(loaded, batching)),
            None => loaded,
        })
    }
}
