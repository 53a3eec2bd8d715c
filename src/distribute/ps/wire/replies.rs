//! The ps tasks' replies at the gRPC edge: encoded by the server, decoded by the client.

use super::super::messages::{Counters, Pulled, PushOutcome, Pushed, Snapshot};
use super::super::proto;
use super::{decode_shaped, decode_values, encode_shaped, encode_values, RaggedValues};

impl From<Pulled> for proto::PullReply {
    fn from(pulled: Pulled) -> Self {
        match pulled {
            Pulled::Done => proto::PullReply {
                done: true,
                ..Default::default()
            },
            Pulled::Values {
                step,
                generation,
                version,
                variables,
            } => proto::PullReply {
                step,
                generation,
                done: false,
                variables: encode_values(variables),
                version,
            },
        }
    }
}

impl TryFrom<proto::PullReply> for Pulled {
    type Error = RaggedValues;

    fn try_from(r: proto::PullReply) -> Result<Self, RaggedValues> {
        if r.done {
            return Ok(Pulled::Done);
        }
        Ok(Pulled::Values {
            step: r.step,
            generation: r.generation,
            version: r.version,
            variables: decode_values(r.variables)?,
        })
    }
}

impl From<PushOutcome> for proto::PushOutcome {
    fn from(outcome: PushOutcome) -> Self {
        match outcome {
            PushOutcome::Applied => proto::PushOutcome::Applied,
            PushOutcome::Stale => proto::PushOutcome::Stale,
            PushOutcome::Reinitialised => proto::PushOutcome::Reinitialised,
            PushOutcome::Done => proto::PushOutcome::Done,
        }
    }
}

/// The outcome a reply's number stands for; one this build does not know counts as not
/// applied.
fn outcome(number: i32) -> PushOutcome {
    match proto::PushOutcome::try_from(number) {
        Ok(proto::PushOutcome::Applied) => PushOutcome::Applied,
        Ok(proto::PushOutcome::Reinitialised) => PushOutcome::Reinitialised,
        Ok(proto::PushOutcome::Done) => PushOutcome::Done,
        Ok(proto::PushOutcome::Stale) | Err(_) => PushOutcome::Stale,
    }
}

impl From<Pushed> for proto::PushReply {
    fn from(pushed: Pushed) -> Self {
        proto::PushReply {
            outcome: proto::PushOutcome::from(pushed.outcome) as i32,
            step: pushed.step,
            generation: pushed.generation,
            variables: encode_values(pushed.variables),
            version: pushed.version,
        }
    }
}

impl TryFrom<proto::PushReply> for Pushed {
    type Error = RaggedValues;

    fn try_from(r: proto::PushReply) -> Result<Self, RaggedValues> {
        Ok(Pushed {
            outcome: outcome(r.outcome),
            step: r.step,
            generation: r.generation,
            version: r.version,
            variables: decode_values(r.variables)?,
        })
    }
}

impl From<Snapshot> for proto::SnapshotReply {
    fn from(snapshot: Snapshot) -> Self {
        proto::SnapshotReply {
            step: snapshot.step,
            variables: encode_shaped(snapshot.variables),
            optimizer_state: snapshot.optimizer_state,
        }
    }
}

impl TryFrom<proto::SnapshotReply> for Snapshot {
    type Error = RaggedValues;

    fn try_from(r: proto::SnapshotReply) -> Result<Self, RaggedValues> {
        Ok(Snapshot {
            step: r.step,
            variables: decode_shaped(r.variables)?,
            optimizer_state: r.optimizer_state,
        })
    }
}

impl From<Counters> for proto::ControlReply {
    fn from(c: Counters) -> Self {
        proto::ControlReply {
            step: c.step,
            pushes_applied: c.pushes_applied,
            pushes_dropped: c.pushes_dropped,
            bytes_served: c.bytes_served,
            bytes_received: c.bytes_received,
            staleness_sum: c.staleness_sum,
        }
    }
}

impl From<proto::ControlReply> for Counters {
    fn from(r: proto::ControlReply) -> Self {
        Counters {
            step: r.step,
            pushes_applied: r.pushes_applied,
            pushes_dropped: r.pushes_dropped,
            bytes_served: r.bytes_served,
            bytes_received: r.bytes_received,
            staleness_sum: r.staleness_sum,
        }
    }
}
