//! [`Loaders`]: which estimators a server can load, by the name an export records: the
//! estimator's stable [`export_name`](estimator::Estimator::export_name), or for an export
//! made before names were recorded, its Rust type name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use estimator::device::ResolvedDevice;
use estimator::export::{ExportInfo, EXPORT_FILE};
use estimator::{CpuBackend, DeviceSpec};
use estimators::{
    BaselineClassifier, BaselineRegressor, DnnClassifier, DnnLinearCombinedClassifier,
    DnnLinearCombinedRegressor, DnnRegressor, LinearClassifier, LinearRegressor,
};

use crate::batching::{Batched, Batching};
use crate::grpc::warm_up;
use crate::load_fault::LoadFault;
use crate::prediction_threads::PredictionThreads;
use estimator::export::ServableEstimator;

use crate::servable::{Servable, Served};

type Load = fn(&Path, ResolvedDevice, &PredictionThreads) -> estimator::Result<Arc<dyn Servable>>;

/// How often a version whose load failed is loaded again while its files stay as they were
/// (TF Serving's `--max_num_load_retries` and `--load_retry_interval_micros`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadRetries {
    /// Loads after the first that failed (0: none).
    pub max: u32,
    /// The wait between two.
    pub interval: Duration,
}

impl Default for LoadRetries {
    /// TF Serving's: 5 more, a minute apart.
    fn default() -> Self {
        Self {
            max: 5,
            interval: Duration::from_secs(60),
        }
    }
}

/// The estimators a server loads, keyed by the name in an export's `export.json`.
#[derive(Clone)]
pub struct Loaders {
    by_name: BTreeMap<String, Load>,
    batching: Option<Batching>,
    device: DeviceSpec,
    pub(crate) retries: LoadRetries,
    warmup: bool,
    warmup_iterations: usize,
    per_model_batching: bool,
    threads: PredictionThreads,
    /// Classify and Regress refused on a signature of the other method.
    pub(crate) method_check: bool,
}

impl Loaders {
    /// No estimator yet: add each with [`Loaders::with`].
    pub fn new() -> Self {
        Self {
            by_name: BTreeMap::new(),
            batching: None,
            device: DeviceSpec::Cpu,
            retries: LoadRetries::default(),
            warmup: true,
            warmup_iterations: 1,
            per_model_batching: false,
            threads: PredictionThreads::default(),
            method_check: false,
        }
    }

    /// Every canned estimator.
    pub fn canned() -> Self {
        Self::new()
            .with::<DnnClassifier>()
            .with::<DnnRegressor>()
            .with::<LinearClassifier>()
            .with::<LinearRegressor>()
            .with::<DnnLinearCombinedClassifier>()
            .with::<DnnLinearCombinedRegressor>()
            .with::<BaselineClassifier>()
            .with::<BaselineRegressor>()
    }

    /// Also loads exports of `E` (a user's estimator): those recording its
    /// [`export_name`](estimator::Estimator::export_name), and older ones recording its
    /// type name.
    pub fn with<E: ServableEstimator>(self) -> Self {
        let type_name = std::any::type_name::<E>();
        self.with_former_name::<E>(type_name)
    }

    /// Also loads, as exports of `E`, those recording `name`: the type name (or stable
    /// name) `E` had before it was renamed or moved, as `export.json`'s `estimator_type`
    /// (or `estimator_name`) says.
    pub fn with_former_name<E: ServableEstimator>(mut self, name: &str) -> Self {
        fn load<E: ServableEstimator>(
            dir: &Path,
            device: ResolvedDevice,
            threads: &PredictionThreads,
        ) -> estimator::Result<Arc<dyn Servable>> {
            match device {
                ResolvedDevice::Cpu => Ok(Arc::new(Served::<E, CpuBackend>::load_with_threads(
                    dir,
                    Default::default(),
                    threads.clone(),
                )?)),
                #[cfg(feature = "cuda")]
                ResolvedDevice::Cuda(index) => Ok(Arc::new(Served::<
                    E,
                    estimator::device::CudaBackend,
                >::load_with_threads(
                    dir,
                    burn::backend::cuda::CudaDevice::new(index),
                    threads.without_pool(),
                )?)),
                #[cfg(not(feature = "cuda"))]
                ResolvedDevice::Cuda(_) => Err(estimator::Error::Config(
                    "this server was built without the `cuda` feature".into(),
                )),
            }
        }
        self.by_name.insert(E::export_name(), load::<E>);
        self.by_name.insert(name.to_string(), load::<E>);
        self
    }

    /// Loads the versions onto `device` (the CPU by default).
    pub fn on(mut self, device: DeviceSpec) -> Self {
        self.device = device;
        self
    }

    /// Loads a version whose load failed (on the device, or reading its variables) again as
    /// `retries` says, instead of TF Serving's 5 more a minute apart.
    pub fn with_load_retries(mut self, retries: LoadRetries) -> Self {
        self.retries = retries;
        self
    }

    /// Whether a version answers the requests of its warmup file
    /// (`assets.extra/tf_serving_warmup_requests`) before it serves: on by default, as TF
    /// Serving's `--enable_model_warmup`.
    pub fn with_model_warmup(mut self, warmup: bool) -> Self {
        self.warmup = warmup;
        self
    }

    /// The threads each version's predictions take (TF Serving's
    /// `--tensorflow_intra_op_parallelism` and `--tensorflow_inter_op_parallelism`).
    pub fn with_prediction_threads(mut self, threads: PredictionThreads) -> Self {
        self.threads = threads;
        self
    }

    /// How many times each warmup request is answered (TF Serving's
    /// `--num_request_iterations_for_warmup`; 1 by default, and for 0).
    pub fn with_warmup_iterations(mut self, iterations: usize) -> Self {
        self.warmup_iterations = iterations.max(1);
        self
    }

    /// Whether Classify and Regress (a MultiInference task's, a warmup record's too) are
    /// refused on a signature of the other method, `classification` for Regress: off by
    /// default, as TF Serving's `--enable_signature_method_name_check`.
    pub fn with_signature_method_name_check(mut self, check: bool) -> Self {
        self.method_check = check;
        self
    }

    /// Merges concurrent requests to each loaded version (server-side batching).
    pub fn with_batching(mut self, batching: Batching) -> Self {
        self.batching = Some(batching);
        self
    }

    /// With batching, each version batches as its own `batching_params.pbtxt` says, and a
    /// version without one does not batch (TF Serving's
    /// `--enable_per_model_batching_parameters`).
    pub fn with_per_model_batching(mut self, per_model: bool) -> Self {
        self.per_model_batching = per_model;
        self
    }

    /// Loads the export in `dir` and answers its warmup requests; an error names the
    /// directory and, for an estimator this server does not know, its name.
    pub fn load(&self, dir: &Path) -> Result<Arc<dyn Servable>, LoadFault> {
        let info_path = dir.join(EXPORT_FILE);
        let missing = !info_path.exists();
        let info: ExportInfo = std::fs::read(&info_path)
            .map_err(|e| match dir.join("saved_model.pb").is_file() {
                // A TF Serving user's model directory, pointed at as it was.
                true => "the directory holds a TensorFlow SavedModel (saved_model.pb), which \
                         this server does not load: serve the export of an estimator of this \
                         project (`dnn-classifier export`, `Estimator::export`)"
                    .to_string(),
                false => e.to_string(),
            })
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
            .map_err(|reason| LoadFault::ExportInfo {
                path: info_path,
                reason,
                missing,
            })?;
        let load = self
            .by_name
            .get(info.estimator_key())
            .or_else(|| self.by_name.get(&info.estimator_type))
            .ok_or_else(|| LoadFault::UnknownEstimator {
                dir: dir.to_path_buf(),
                estimator: info.estimator_key().to_string(),
                known: self.by_name.keys().cloned().collect(),
            })?;
        let batching = self.version_batching(dir)?;
        let device = self
            .device
            .resolve()
            .map_err(|e| LoadFault::of_error(dir, &e))?;
        let loaded = load(dir, device, &self.threads).map_err(|e| LoadFault::of_error(dir, &e))?;
        if self.warmup {
            let iterations = self.warmup_iterations;
            let answered = warm_up(dir, loaded.as_ref(), iterations, self.method_check)?;
            if answered > 0 {
                tracing::info!("{}: answered {answered} warmup requests", dir.display());
            }
        }
        Ok(match batching {
            Some(batching) => Arc::new(Batched::new(loaded, batching)),
            None => loaded,
        })
    }

    /// The batching of the version in `dir`: the server's, or with per-model parameters
    /// the version's own `batching_params.pbtxt` (none there: not batched), as TF Serving
    /// reads them.
    fn version_batching(&self, dir: &Path) -> Result<Option<Batching>, LoadFault> {
        let Some(common) = &self.batching else {
            return Ok(None);
        };
        if !self.per_model_batching {
            return Ok(Some(common.clone()));
        }
        let path = dir.join(PER_MODEL_BATCHING_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        std::fs::read_to_string(&path)
            .map_err(anyhow::Error::from)
            .and_then(|text| Batching::from_text_proto(&text))
            .map(Some)
            .map_err(|e| LoadFault::Batching {
                path,
                reason: format!("{e:#}"),
            })
    }
}

/// A version's own batching parameters, in its directory (TF Serving's name for the file).
const PER_MODEL_BATCHING_FILE: &str = "batching_params.pbtxt";

impl Default for Loaders {
    fn default() -> Self {
        Self::new()
    }
}
