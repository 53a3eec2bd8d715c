//! A model's weights as safetensors bytes: what checkpoints and exports store.

mod weights;

pub use weights::{load_weights, weights_to_safetensors};
