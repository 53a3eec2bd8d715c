//! Why a call to the ps tasks brought no replies, where the training loop acts on why;
//! apart from the clients so that `error.rs` can hold it without an import cycle.

use std::fmt;
use std::time::Duration;

/// Why a call to the ps tasks brought no replies: the training loop acts on it (the chief
/// re-initialises a ps that lost its variables, the other tasks wait for it; a push that
/// reached no ps is dropped) and reports the rest as a lost peer. Carried by
/// [`Error::Ps`](crate::Error::Ps); a ps's other failures are other errors.
#[derive(Debug, Clone, PartialEq)]
pub enum PsFault {
    /// A ps has no variables: it started after the chief initialised the others, or
    /// restarted. The chief re-initialises; other tasks wait for it.
    NotInitialised {
        /// The ps at fault.
        ps: usize,
    },
    /// A synchronous update gave up waiting for the gradients of these training tasks
    /// (ranks): they are stopped, dead or cut off.
    TasksMissing {
        /// The training tasks that pushed nothing for the step.
        ranks: Vec<u32>,
        /// What the ps said.
        message: String,
    },
    /// A ps refused the connection or dropped the call before acting on it (restarting,
    /// or gone): a push is not sent again, but the next pull retries with backoff.
    Unreachable {
        /// The ps at fault.
        ps: usize,
        /// Why the call failed.
        message: String,
    },
    /// A ps kept the call open without answering past its wait and a margin: stopped or
    /// hung (a restarting ps refuses connections instead, which is worth another try).
    Unresponsive {
        /// The ps at fault.
        ps: usize,
        /// How long it was waited for.
        waited: Duration,
    },
}

/// The task at fault, then what happened to it, as a lost peer is reported.
impl fmt::Display for PsFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PsFault::NotInitialised { ps } => write!(
                f,
                "ps:{ps}: it lost its variables (restarted?) and no chief re-initialised it"
            ),
            PsFault::TasksMissing { ranks, message } => {
                let ranks: Vec<String> = ranks.iter().map(|r| format!("rank {r}")).collect();
                write!(f, "{}: {message}", ranks.join(", "))
            }
            PsFault::Unreachable { ps, message } => {
                write!(f, "ps:{ps}: cannot reach it: {message}")
            }
            PsFault::Unresponsive { ps, waited } => write!(
                f,
                "ps:{ps}: it did not answer within {waited:.1?} (stopped, hung or cut off)"
            ),
        }
    }
}
