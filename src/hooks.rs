//! Training hooks: logging, stop-at-step, NaN guard, step counter, early stopping.

mod control;
mod early_stopping;
mod hook;
mod logging;
mod nan_guard;
mod step_counter;
mod stop_at_step;

pub use control::{CombinedControl, Control};
pub use early_stopping::{should_stop, threshold_crossed, EarlyStoppingHook, Improvement};
pub use hook::{Emit, Hook, RunEnd, RunStart, StepInfo};
pub use logging::LoggingHook;
pub use nan_guard::NanGuardHook;
pub use step_counter::StepCounterHook;
pub use stop_at_step::StopAtStepHook;
