//! Mixed precision, as Keras's `mixed_bfloat16` / `mixed_float16` policies and TF's
//! `LossScaleOptimizer`: the forward and backward passes compute in 16 bits while the
//! weights the optimizer updates, its state, the loss and the checkpoints stay in f32.
//!
//! [`MixedPrecision`] is the policy ([`RunConfig::mixed_precision`]) and the casts a model
//! calls where it wants 16-bit arithmetic ([`MixedPrecision::linear`],
//! [`MixedPrecision::autocast`]); Burn has no automatic casting, so a model that never calls
//! them computes in f32 whatever the policy says. [`LossScale`] keeps float16's small
//! gradients from flushing to zero.
//!
//! [`RunConfig::mixed_precision`]: crate::RunConfig::mixed_precision

mod loss_scale;
mod policy;
mod unscale;

pub use loss_scale::{LossScale, LossScaleState};
pub use policy::MixedPrecision;
pub(crate) use unscale::unscale_gradients;
