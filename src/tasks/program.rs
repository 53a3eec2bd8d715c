//! `estimator::main`: what every training program's `main` needs, so that the same binary
//! runs as any task of a cluster — logging, the one-line error, the exit code a job
//! controller acts on.

use std::any::Any;
use std::error::Error as StdError;
use std::io::IsTerminal;
use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use crate::cluster::log_filter_from_env;
use crate::error::Error;

/// Runs `program` as a training program's `main`: starts logging to standard error
/// (`RUST_LOG`-style filter, `info` by default; colours on a terminal), runs it, and turns
/// its result into the process's exit code — 0, [`RETRYABLE_EXIT_CODE`] (128) when the
/// error is a lost peer (Kubeflow's `ExitCode` restart policy then restarts the task), 128 +
/// the signal when training stopped on SIGTERM or SIGINT
/// ([`TrainSpec::stop_on_signals`](crate::TrainSpec::stop_on_signals)), 1 otherwise —
/// after printing the error and its causes on one line. The lost peer is found
/// anywhere in the chain of causes, also inside an `anyhow::Error`.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     estimator::main(|| -> estimator::Result<()> {
///         // build the estimator, then est.train(...)?;
///         Ok(())
///     })
/// }
/// ```
///
/// [`RETRYABLE_EXIT_CODE`]: crate::RETRYABLE_EXIT_CODE
pub fn main<E>(program: impl FnOnce() -> Result<(), E>) -> ExitCode
where
    E: Into<Box<dyn StdError + Send + Sync>> + 'static,
{
    let filter = log_filter(log_filter_from_env().as_deref());
    // A program that set up its own subscriber keeps it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
    match program() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // anyhow's conversion into a boxed error hides the error it holds from
            // `downcast_ref` (the box is anyhow's own wrapper, whose `source` skips it), so an
            // anyhow error's chain is read before the conversion.
            let anyhow_code = (&error as &dyn Any)
                .downcast_ref::<anyhow::Error>()
                .map(|error| exit_code(error.chain()));
            let error = error.into();
            let name = std::env::args().next().unwrap_or_default();
            let name = std::path::Path::new(&name)
                .file_name()
                .map_or("program".into(), |n| n.to_string_lossy().into_owned());
            eprintln!("{name}: error: {}", one_line(error.as_ref()));
            let code = anyhow_code.unwrap_or_else(|| exit_code(causes(error.as_ref())));
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}

/// An error and its causes, outermost first.
fn causes<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&error| error.source())
}

/// The exit code an error calls for: that of the first [`Error`] among its causes.
fn exit_code<'a>(mut causes: impl Iterator<Item = &'a (dyn StdError + 'static)>) -> i32 {
    causes
        .find_map(|cause| cause.downcast_ref::<Error>())
        .map_or(1, Error::exit_code)
}

/// The error and its causes on one line, leaving out causes the message already quotes.
fn one_line(error: &(dyn StdError + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(error);
    while let Some(error) = cause {
        let text = error.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = error.source();
    }
    line.replace('\n', " ")
}

/// The filter `RUST_LOG`'s value (`rust_log`) asks for, as every tracing program reads it;
/// `info` when unset or unreadable.
fn log_filter(rust_log: Option<&str>) -> EnvFilter {
    rust_log
        .and_then(|value| EnvFilter::try_new(value).ok())
        .unwrap_or_else(|| EnvFilter::new("info"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("training failed")]
    struct Wrapper(#[source] Error);

    #[test]
    fn a_lost_peer_anywhere_in_the_chain_is_retryable() {
        let lost = Error::PeerLost {
            task: "worker:0".into(),
            message: "connection lost".into(),
        };
        let wrapped: Box<dyn std::error::Error + Send + Sync> = Box::new(Wrapper(lost));
        assert_eq!(
            exit_code(causes(wrapped.as_ref())),
            crate::RETRYABLE_EXIT_CODE
        );
        assert_eq!(
            one_line(wrapped.as_ref()),
            "training failed: lost worker:0: connection lost"
        );
        let config: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Error::Config("bad\nvalue".into()));
        assert_eq!(exit_code(causes(config.as_ref())), 1);
        assert_eq!(
            one_line(config.as_ref()),
            "invalid configuration: bad value"
        );
        let other: Box<dyn std::error::Error + Send + Sync> = "not ours".into();
        assert_eq!(exit_code(causes(other.as_ref())), 1);
    }

    #[test]
    fn the_log_filter_is_rust_logs_when_it_parses_and_info_otherwise() {
        assert_eq!(
            log_filter(Some("estimator=debug")).to_string(),
            "estimator=debug"
        );
        assert_eq!(log_filter(None).to_string(), "info");
        assert_eq!(log_filter(Some("estimator=loudest")).to_string(), "info");
    }

    #[test]
    fn a_lost_peer_inside_anyhow_is_retryable() {
        let lost = || Error::PeerLost {
            task: "worker:0".into(),
            message: "connection lost".into(),
        };
        let plain = anyhow::Error::from(lost());
        assert_eq!(exit_code(plain.chain()), crate::RETRYABLE_EXIT_CODE);
        let wrapped = anyhow::Error::from(lost()).context("training");
        assert_eq!(exit_code(wrapped.chain()), crate::RETRYABLE_EXIT_CODE);
        // What `main` would see after the conversion alone: the lost peer is hidden.
        let boxed: Box<dyn StdError + Send + Sync> = anyhow::Error::from(lost()).into();
        assert_eq!(exit_code(causes(boxed.as_ref())), 1);
        assert_eq!(exit_code(anyhow::anyhow!("not ours").chain()), 1);
    }
}
