//! The canned estimators: a network and a head implementing the core `Estimator`.

mod baseline;
mod canned_estimator;
mod classification;
mod device_cache;
mod dnn;
mod dnn_options;
mod heads;
mod linear;
mod regression;
mod serving;
mod task;
mod warm_start;
mod weight_column;
mod wide_deep;

pub use baseline::{BaselineClassifier, BaselineRegressor};
pub use canned_estimator::{CannedBatch, CannedEstimator};
pub use device_cache::InputValues;
pub use dnn::{DnnClassifier, DnnRegressor};
pub use dnn_options::HasDnn;
pub use linear::{LinearClassifier, LinearRegressor};
pub use task::{Classification, Regression, Task};
pub use warm_start::{FollowedByName, Follower};
pub use weight_column::WeightColumn;
pub use wide_deep::{DnnLinearCombinedClassifier, DnnLinearCombinedRegressor};
