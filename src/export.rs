//! Export directories (weights + signature + configuration), the exporters run after
//! evaluations, the `Predictor` loader, and what serving an export needs of an estimator.

mod base_path;
mod export_fault;
mod exporters;
mod instances;
mod prediction_value;
mod predictor;
mod request_fault;
mod serving;
mod signature;
mod tensors;
mod writer;

pub use crate::estimator::ESTIMATOR_FILE;
pub use base_path::version_dirs;
pub use export_fault::ExportFault;
pub use exporters::{Exporter, BEST_FILE, DEFAULT_EXPORTS_TO_KEEP};
pub use instances::{check_instance, check_instances, float_input, floats_input, text_input};
pub use predictor::Predictor;
pub use request_fault::RequestFault;
pub use serving::{prediction_json, Instance, ServableEstimator};
pub use signature::{DType, InputSpec, Signature};
pub use tensors::{InputTensors, ServingTensor, TensorElements};
pub use writer::{
    export, export_checkpoint, export_stamps, ExportInfo, EXPORT_FILE, EXPORT_FORMAT_VERSION,
    SIGNATURE_FILE, WEIGHTS_FILE,
};
