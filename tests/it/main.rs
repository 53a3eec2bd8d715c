//! Integration tests of the core crate: one test binary, one module per concern.

mod checkpoints;
mod cpu_threads;
mod distributed;
mod export_dir_removal;
mod loss_readback;
mod parameter_server;
mod resume;
mod summary_support;
mod support;
mod train_and_evaluate;
mod train_and_evaluate_cluster;
mod training;
mod worker_resume;
