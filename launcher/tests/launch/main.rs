//! The `estimator-launch` binary as a user runs it: real processes, every wait bounded, no
//! process left behind.

mod closed_pipes;
mod exits;
mod explain_and_usage;
mod harness;
mod stop_signal;
mod supervision;
mod task_environment;
