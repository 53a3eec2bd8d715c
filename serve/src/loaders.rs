//! [`Loaders`]: which estimator types a server can load, by the type name an export records.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use estimator::export::{ExportInfo, EXPORT_FILE};
use estimators::{
    BaselineClassifier, BaselineRegressor, DnnClassifier, DnnLinearCombinedClassifier,
    DnnLinearCombinedRegressor, DnnRegressor, LinearClassifier, LinearRegressor,
};

use crate::batching::{Batched, Batching};
use crate::servable::{Servable, ServableEstimator, Served};

type Load = fn(&Path) -> estimator::Result<Arc<dyn Servable>>;

/// The estimator types a server loads, keyed by the type name in an export's
/// `export.json`.
#[derive(Clone)]
pub struct Loaders {
    by_type: BTreeMap<String, Load>,
    batching: Option<Batching>,
}

impl Loaders {
    /// Every canned estimator.
    pub fn canned() -> Self {
        Self {
            by_type: BTreeMap::new(),
            batching: None,
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
        fn load<E: ServableEstimator>(dir: &Path) -> estimator::Result<Arc<dyn Servable>> {
            Ok(Arc::new(Served::<E>::load(dir)?))
        }
        self.by_type
            .insert(std::any::type_name::<E>().to_string(), load::<E>);
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
        let loaded = load(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(match self.batching {
            Some(batching) => Arc::new(Batched::new(loaded, batching)),
            None => loaded,
        })
    }
}
