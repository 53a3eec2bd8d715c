//! The model config file read again every `--model-config-file-poll-wait-seconds`, as TF
//! Serving's `--model_config_file_poll_wait_seconds`: a model added to the file is loaded,
//! one removed is unloaded, one whose settings changed is rescanned.

use std::path::PathBuf;
use std::time::Duration;

use crate::model_config_file::ModelConfigFile;
use crate::server::Server;

/// Reads `path` every `every` for as long as the server runs. A change is applied whole or
/// not at all: a file that does not parse, or lists what [`Server::load`] would refuse, is
/// logged once and the models served stay as they were until the file changes again.
/// `started_from` is the text the server's models were read from.
pub(crate) async fn watch_model_config(
    server: Server,
    path: PathBuf,
    started_from: String,
    every: Duration,
) {
    let mut seen = started_from;
    let mut unreadable = None;
    let mut ticks = tokio::time::interval(every);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let text = match tokio::fs::read_to_string(&path).await {
            Ok(text) => text,
            Err(e) => {
                // A ConfigMap's files are swapped by renames: a read may miss one.
                let why = e.to_string();
                if unreadable.as_ref() != Some(&why) {
                    tracing::warn!("cannot read {}: {why}", path.display());
                }
                unreadable = Some(why);
                continue;
            }
        };
        unreadable = None;
        if seen == text {
            continue;
        }
        seen = text.clone();
        let server = server.clone();
        let applied = tokio::task::spawn_blocking(move || {
            server.reconfigure(ModelConfigFile::parse(&text)?.models())
        })
        .await;
        match applied {
            Ok(Ok(())) => tracing::info!("{}: now serving its models", path.display()),
            Ok(Err(e)) => tracing::error!(
                "{}: not applied, the models served stay as they were: {e:#}",
                path.display()
            ),
            Err(e) => tracing::error!("{}: not applied: {e}", path.display()),
        }
    }
}
