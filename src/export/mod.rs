//! Export directories (weights + signature + configuration), the exporters run after
//! evaluations, and the `Predictor` loader.

mod exporters;
mod predictor;
mod signature;
mod writer;

pub use crate::estimator::ESTIMATOR_FILE;
pub use exporters::{Exporter, BEST_FILE, DEFAULT_EXPORTS_TO_KEEP};
pub use predictor::Predictor;
pub use signature::{DType, InputSpec, Signature};
pub use writer::{
    export, export_checkpoint, export_stamps, ExportInfo, EXPORT_FILE, EXPORT_FORMAT_VERSION,
    SIGNATURE_FILE, WEIGHTS_FILE,
};
