//! Progress bars for train and evaluate, hidden when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar that also routes log lines so they do not tear the bar.
pub struct RunProgressBar {
    bar: ProgressBar,
    /// Whether the bar is drawn at all: a hidden one is not updated (formatting each step's
    /// message would cost the training thread for nothing).
    shown: bool,
}

impl RunProgressBar {
    /// A bar over `len` steps (or a spinner when unknown); hidden unless `enabled` and
    /// stderr is a terminal.
    pub fn new(len: Option<u64>, enabled: bool, prefix: &str) -> Self {
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        if !enabled {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        let template = if len.is_some() {
            "{prefix} [{bar:30}] {pos}/{len} {msg} ({per_sec}, eta {eta})"
        } else {
            "{prefix} {spinner} {pos} {msg} ({per_sec})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(prefix.to_string());
        let shown = !bar.is_hidden();
        Self { bar, shown }
    }

    /// Moves the bar to `position` with the status `message` makes (e.g. the loss).
    pub fn update(&self, position: u64, message: impl FnOnce() -> String) {
        if self.shown {
            self.bar.set_position(position);
            self.bar.set_message(message());
        }
    }

    /// Logs `line` without tearing the bar.
    pub fn log(&self, line: &str) {
        self.bar.suspend(|| tracing::info!("{line}"));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
