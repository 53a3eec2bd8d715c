//! Integration tests of the canned estimators and of the `dnn-classifier` binary, alone and
//! as every task of a cluster under `estimator-launch` (one test binary for the crate).

mod canned;
mod canned_accuracy;
mod cli;
mod cli_device_cache;
mod cli_input_errors;
mod cli_model_dir;
mod cli_training;
mod cluster;
mod derived_metrics;
mod device_cache;
mod fault_campaign;
mod input_files;
mod launchers;
mod loss_reduction;
mod malformed_inputs;
mod mixed_precision;
mod network_faults;
mod parquet_input;
mod pretrained_embeddings;
mod ps_cluster;
mod ps_faults;
mod restarts;
mod ring_order;
mod shaped_buckets;
mod sharded_resume;
mod shared_embeddings;
mod stall;
mod termination;
mod tfrecord_input;
mod tls_cluster;
