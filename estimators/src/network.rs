//! The networks behind the canned estimators: each turns a batch into logits.

mod activation;
mod base;
mod baseline;
mod dnn;
mod linear;
mod wide_deep;

pub use activation::Activation;
pub use base::Network;
pub use baseline::{BaselineModel, BaselineNetwork};
pub use dnn::{DnnModel, DnnNetwork};
pub use linear::{LinearModel, LinearNetwork};
pub use wide_deep::{WideDeepModel, WideDeepNetwork};
