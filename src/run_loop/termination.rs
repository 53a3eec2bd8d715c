//! Training asked to terminate (SIGTERM, as Kubernetes sends a pod before it kills it;
//! SIGINT, a terminal's Ctrl-C) ends the step under way, lets the chief save a checkpoint
//! at it and returns [`Error::Terminated`], instead of losing the steps since the last
//! checkpoint (TF's `PreemptionCheckpointHandler`). A second signal terminates at once.
//!
//! The handlers stay registered once a run has asked for them (signal-hook cannot take a
//! termination handler back without leaving the signal ignored); outside a run that
//! watches, a signal does what it would without them. A signal the process ignores (SIGINT
//! in a script's background job) is left ignored, and one it already handles (its own
//! handler, tokio's) is only watched: that handler decides what else happens, also to a
//! second signal.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

use crate::error::{Error, Result};

/// Why a run stops before its last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Termination {
    /// This process received the signal, and stops alone (one device, parameter servers).
    Alone(i32),
    /// This process received the signal; the replicas in step with it stop at the same step.
    Here(i32),
    /// Another replica in step received it.
    Peer,
}

impl Termination {
    /// The error the run ends with, at `global_step`; `is_chief`: whether this task saved
    /// the checkpoint there.
    pub fn error(self, global_step: u64, is_chief: bool) -> Error {
        let (signal, checkpoint) = match self {
            Termination::Alone(signal) => (Some(signal), is_chief),
            Termination::Here(signal) => (Some(signal), true),
            Termination::Peer => (None, true),
        };
        Error::Terminated {
            global_step,
            signal,
            checkpoint,
        }
    }
}

/// What the handlers set, shared with them.
struct Flags {
    /// The signal received while watched (0: none).
    received: Arc<AtomicUsize>,
    /// Whether the next signal acts as if unhandled: no run is watching, or one already
    /// received a signal.
    unhandled: Arc<AtomicBool>,
}

static FLAGS: OnceLock<std::io::Result<Flags>> = OnceLock::new();
/// How many runs of this process are watching.
static WATCHING: Mutex<usize> = Mutex::new(0);
/// Whether any is: a signal a handler of the program's own took outside a run is no
/// request to stop.
static WATCHED: AtomicBool = AtomicBool::new(false);

fn flags() -> Result<&'static Flags> {
    let registered = FLAGS.get_or_init(|| {
        let flags = Flags {
            received: Arc::new(AtomicUsize::new(0)),
            unhandled: Arc::new(AtomicBool::new(true)),
        };
        for signal in [SIGTERM, SIGINT] {
            match disposition(signal) {
                Disposition::Ignored => continue,
                // In this order: unhandled → the default action; else arm the next signal's
                // default action, and record this one.
                Disposition::Default => {
                    flag::register_conditional_default(signal, Arc::clone(&flags.unhandled))?;
                    flag::register(signal, Arc::clone(&flags.unhandled))?;
                }
                Disposition::Handled => {}
            }
            flag::register_usize(signal, Arc::clone(&flags.received), signal as usize)?;
        }
        Ok(flags)
    });
    registered
        .as_ref()
        .map_err(|e| Error::Config(format!("cannot watch for SIGTERM and SIGINT: {e}")))
}

/// The signal this process received while a run watched, if any.
pub(crate) fn received() -> Option<i32> {
    if !WATCHED.load(Ordering::SeqCst) {
        return None;
    }
    let flags = FLAGS.get()?.as_ref().ok()?;
    match flags.received.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal as i32),
    }
}

/// A run's watch for termination signals, from [`SignalWatch::start`] until dropped.
pub(crate) struct SignalWatch(());

impl SignalWatch {
    /// Starts watching; the first watch of a process registers the handlers.
    pub fn start() -> Result<Self> {
        let flags = flags()?;
        let mut watching = WATCHING.lock().unwrap_or_else(PoisonError::into_inner);
        if *watching == 0 {
            flags.received.store(0, Ordering::SeqCst);
            flags.unhandled.store(false, Ordering::SeqCst);
            WATCHED.store(true, Ordering::SeqCst);
        }
        *watching += 1;
        Ok(SignalWatch(()))
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        let mut watching = WATCHING.lock().unwrap_or_else(PoisonError::into_inner);
        *watching -= 1;
        if let (0, Some(Ok(flags))) = (*watching, FLAGS.get()) {
            WATCHED.store(false, Ordering::SeqCst);
            flags.unhandled.store(true, Ordering::SeqCst);
            flags.received.store(0, Ordering::SeqCst);
        }
    }
}

/// What a signal does before the handlers are registered.
enum Disposition {
    /// Its default action (SIGTERM, SIGINT: end the process).
    Default,
    /// Nothing, as SIGINT in a job a script started in the background: it stays so (as
    /// Python leaves it).
    Ignored,
    /// The program's own handler runs.
    Handled,
}

/// What `signal` does now.
#[allow(unsafe_code)]
fn disposition(signal: libc::c_int) -> Disposition {
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with no new action, sigaction only writes the current one into `current`,
    // which is zeroed (a valid sigaction) whatever it does.
    let read = unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: zeroed, then written by the kernel: initialised either way.
    let handler = unsafe { current.assume_init() }.sa_sigaction;
    match handler {
        _ if read != 0 => Disposition::Default,
        libc::SIG_IGN => Disposition::Ignored,
        libc::SIG_DFL => Disposition::Default,
        _ => Disposition::Handled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_with_a_handler_of_the_programs_own_is_told_from_one_left_as_default() {
        // SIGUSR2: no other test uses it, and its handler sets a flag only.
        let signal = signal_hook::consts::SIGUSR2;
        assert!(matches!(disposition(signal), Disposition::Default));
        let id = flag::register(signal, Arc::new(AtomicBool::new(false))).unwrap();
        assert!(matches!(disposition(signal), Disposition::Handled));
        signal_hook::low_level::unregister(id);
    }
}
