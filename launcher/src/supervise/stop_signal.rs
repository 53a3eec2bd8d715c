//! The launcher's own SIGINT or SIGTERM (a terminal's Ctrl-C, a scheduler stopping the job):
//! the first is passed on to every task as SIGTERM — a training task then stops after its
//! step with a checkpoint — and the tasks get the grace to exit; a second one kills the
//! launcher at once, and with it (its sentinel) every task.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// The signal the launcher received, as set by its handlers.
pub(super) struct StopSignal {
    received: Arc<AtomicUsize>,
}

impl StopSignal {
    /// Registers the handlers for the rest of the process.
    pub fn watch() -> io::Result<Self> {
        let received = Arc::new(AtomicUsize::new(0));
        let again = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // In this order: a second signal takes the default action; the first arms it.
            flag::register_conditional_default(signal, Arc::clone(&again))?;
            flag::register(signal, Arc::clone(&again))?;
            flag::register_usize(signal, Arc::clone(&received), signal as usize)?;
        }
        Ok(StopSignal { received })
    }

    /// The signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal as i32),
        }
    }
}

/// The signal's name, for the launcher's note.
pub(super) fn name(signal: i32) -> &'static str {
    signal_hook::low_level::signal_name(signal).unwrap_or("a signal")
}

#[cfg(test)]
impl StopSignal {
    /// One that no handler sets: a test raises it through the returned flag.
    pub(super) fn unwatched() -> (Self, Arc<AtomicUsize>) {
        let received = Arc::new(AtomicUsize::new(0));
        let flag = Arc::clone(&received);
        (StopSignal { received }, flag)
    }
}
