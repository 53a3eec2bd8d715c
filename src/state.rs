//! A model's weights as safetensors bytes (what checkpoints and exports store) and as plain
//! values by path (what parameter servers hold).

mod values;
mod weights;

pub use values::{
    load_values, parameter_shapes, parameter_values, parameter_values_where, untrained_values,
    untrained_values_where, values_crc32c,
};
pub use weights::{load_weights, weights_to_safetensors};
