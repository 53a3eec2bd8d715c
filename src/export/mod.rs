//! Export directories (weights + signature + configuration) and the `Predictor` loader.

mod predictor;
mod signature;
mod writer;

pub use predictor::Predictor;
pub use signature::{DType, InputSpec, Signature};
pub use writer::{
    export, ExportInfo, ESTIMATOR_FILE, EXPORT_FILE, EXPORT_FORMAT_VERSION, SIGNATURE_FILE,
    WEIGHTS_FILE,
};
