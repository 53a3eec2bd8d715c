//! `dnn-classifier`: train, evaluate, predict with and export a DNN classifier on CSV or
//! Parquet files or TFRecord files of tf.Example, as TF's `DNNClassifier` from the command
//! line.
//!
//! Run `dnn-classifier --help` (or `cargo run --release -p estimators --bin dnn-classifier --
//! --help`) for the subcommands, each with an example.

mod cadence_flags;
mod classifier;
mod cli;
mod commands;
mod early_stopping_flags;
mod flag_names;
mod input;
mod input_format;
mod memory_check;
mod optimizer_flags;
mod output;
mod prediction_input;
mod resumed_flags;
mod run_flags;
mod timing;
mod train_args;
mod train_command;
mod training_batches;
mod training_input;
mod values;
mod warm_start_layout;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

/// Large buffers a step frees come back at the next step without page faults.
#[global_allocator]
static HEAP: estimator::host_heap::KeepLargeBlocks = estimator::host_heap::KeepLargeBlocks;

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = cli::Cli::parse();
    let ansi = std::io::stderr().is_terminal();
    // `RUST_LOG` as every tracing program reads it; info when unset or unreadable.
    let filter = estimator::cluster::log_filter_from_env()
        .and_then(|value| tracing_subscriber::EnvFilter::try_new(value).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
    match commands::run(cli.command, started) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if output::reader_gone(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dnn-classifier: error: {}", one_line(&error));
            exit_code(&error)
        }
    }
}

/// 128 and above when a restart of the cluster can help (a lost peer), 1 otherwise.
fn exit_code(error: &anyhow::Error) -> ExitCode {
    let code = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<estimator::Error>())
        .map_or(1, estimator::Error::exit_code);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The error and its causes on one line, leaving out causes the message already quotes.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line.replace('\n', " ")
}
