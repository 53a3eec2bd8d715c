//! A click-through-rate classifier written as one's own `Estimator`, on the feature columns
//! of `estimators`: a learned site vocabulary with an out-of-vocabulary bucket (embedded),
//! hashed apps (embedded), a device vocabulary crossed with the part of the day, and
//! standardised numbers. Training, evaluation, prediction, export, checkpoints and every
//! cluster role come from the library.

mod columns;
pub mod data;
mod model;
mod serving;

pub use columns::{ctr_feature_columns, ctr_features_schema, ctr_schema, SITE_VOCABULARY_SIZE};
pub use model::{CtrBatch, CtrClassifier, CtrModel};
