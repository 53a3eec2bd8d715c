//! The gRPC edge of the ps protocol: the crate's messages (`messages.rs`) to and from those
//! of `proto/parameter_server.proto`, with `f32` values as little-endian bytes. Only the
//! gRPC client and server use it.

use std::time::Duration;

use bytes::Bytes;

use super::messages::{Command, Held, Init, Pull, Push, Shaped, Values};
use super::proto;
use super::ragged_values::RaggedValues;
use super::shard::ShardFault;
use crate::error::Error;

mod replies;
#[cfg(test)]
mod tests;

/// `values` as the bytes of a [`proto::Variable`], little-endian: where the machine's order
/// is that already, the vector's own buffer, without a copy (a 64 MiB weight's gradient or
/// values at every push and pull).
pub fn f32_bytes(values: Vec<f32>) -> Bytes {
    if cfg!(target_endian = "little") {
        return Bytes::from_owner(LittleEndian(values));
    }
    let mut out = Vec::with_capacity(values.len() * 4);
    for value in values {
        out.extend_from_slice(&value.to_le_bytes());
    }
    Bytes::from(out)
}

/// Values whose bytes, in the machine's order, are little-endian ones.
struct LittleEndian(Vec<f32>);

impl AsRef<[u8]> for LittleEndian {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

/// The values of a [`proto::Variable`]; an error names the variable when the byte count is
/// not a multiple of 4.
pub fn f32_values(variable: &proto::Variable) -> Result<Vec<f32>, RaggedValues> {
    let bytes = &variable.values;
    if !bytes.len().is_multiple_of(4) {
        return Err(RaggedValues {
            path: variable.path.clone(),
            bytes: bytes.len(),
        });
    }
    let mut values = vec![0.0f32; bytes.len() / 4];
    bytemuck::cast_slice_mut::<f32, u8>(&mut values).copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        values
            .iter_mut()
            .for_each(|v| *v = f32::from_bits(u32::from_le(v.to_bits())));
    }
    Ok(values)
}

/// A [`proto::Variable`] of `path` with `values` (and `shape`, empty when the receiver knows
/// it).
pub fn variable(path: String, shape: &[usize], values: Vec<f32>) -> proto::Variable {
    proto::Variable {
        path,
        shape: shape.iter().map(|&d| d as u64).collect(),
        values: f32_bytes(values),
    }
}

/// The shape of a [`proto::Variable`].
pub fn shape(variable: &proto::Variable) -> Vec<usize> {
    variable.shape.iter().map(|&d| d as usize).collect()
}

fn encode_values(values: Values) -> Vec<proto::Variable> {
    values
        .into_iter()
        .map(|(path, values)| variable(path, &[], values))
        .collect()
}

fn decode_values(variables: Vec<proto::Variable>) -> Result<Values, RaggedValues> {
    variables
        .into_iter()
        .map(|v| f32_values(&v).map(|values| (v.path, values)))
        .collect()
}

fn encode_shaped(variables: Shaped) -> Vec<proto::Variable> {
    variables
        .into_iter()
        .map(|(path, (shape, values))| variable(path, &shape, values))
        .collect()
}

fn decode_shaped(variables: Vec<proto::Variable>) -> Result<Shaped, RaggedValues> {
    variables
        .into_iter()
        .map(|v| Ok((v.path.clone(), (shape(&v), f32_values(&v)?))))
        .collect()
}

impl TryFrom<&Init> for proto::InitRequest {
    type Error = serde_json::Error;

    /// Fails only if the schedule cannot be written as JSON.
    fn try_from(init: &Init) -> Result<Self, serde_json::Error> {
        let learning_rate_schedule = match init.schedule.is_constant() {
            true => String::new(),
            false => serde_json::to_string(&init.schedule)?,
        };
        Ok(proto::InitRequest {
            // A copy: the chief sends the same `Init` again after a ps restarts.
            variables: encode_shaped(init.variables.clone()),
            optimizer_state: init.optimizer_state.clone(),
            optimizer: init.optimizer.clone(),
            learning_rate: init.learning_rate,
            global_step: init.global_step,
            last_step: init.last_step,
            workers: init.workers as u32,
            replicas_to_aggregate: init.replicas_to_aggregate as u32,
            max_staleness: init.max_staleness,
            generation: init.generation,
            learning_rate_schedule,
        })
    }
}

impl TryFrom<proto::InitRequest> for Init {
    type Error = Error;

    /// A schedule or values that do not decode are the shard's refusal of the call.
    fn try_from(r: proto::InitRequest) -> Result<Self, Error> {
        let schedule = match r.learning_rate_schedule.as_str() {
            "" => Default::default(),
            json => serde_json::from_str(json)
                .map_err(|e| Error::Shard(ShardFault::BadSchedule(format!("{e}: {json}"))))?,
        };
        Ok(Init {
            variables: decode_shaped(r.variables)
                .map_err(|e| Error::Shard(ShardFault::Ragged(e)))?,
            optimizer_state: r.optimizer_state,
            optimizer: r.optimizer,
            learning_rate: r.learning_rate,
            schedule,
            global_step: r.global_step,
            last_step: r.last_step,
            workers: r.workers as usize,
            replicas_to_aggregate: r.replicas_to_aggregate as usize,
            max_staleness: r.max_staleness,
            generation: r.generation,
        })
    }
}

/// Training task `worker`'s pull.
pub fn pull_request(worker: u32, pull: Pull) -> proto::PullRequest {
    proto::PullRequest {
        worker,
        wait_ms: millis(pull.wait),
        min_generation: pull.min_generation,
        since: pull.since.map(Into::into),
    }
}

impl From<proto::PullRequest> for Pull {
    fn from(r: proto::PullRequest) -> Self {
        Pull {
            wait: Duration::from_millis(r.wait_ms),
            min_generation: r.min_generation,
            since: r.since.map(Into::into),
        }
    }
}

impl From<Held> for proto::Held {
    fn from(held: Held) -> Self {
        proto::Held {
            generation: held.generation,
            version: held.version,
        }
    }
}

impl From<proto::Held> for Held {
    fn from(held: proto::Held) -> Self {
        Held {
            generation: held.generation,
            version: held.version,
        }
    }
}

impl From<Push> for proto::PushRequest {
    fn from(push: Push) -> Self {
        proto::PushRequest {
            worker: push.worker,
            step: push.step,
            generation: push.generation,
            gradients: encode_values(push.gradients),
            wait_ms: millis(push.wait),
            pull: push.pull,
            assign: encode_values(push.assign),
            since: push.since.map(Into::into),
        }
    }
}

impl TryFrom<proto::PushRequest> for Push {
    type Error = RaggedValues;

    fn try_from(r: proto::PushRequest) -> Result<Self, RaggedValues> {
        Ok(Push {
            worker: r.worker,
            step: r.step,
            generation: r.generation,
            gradients: decode_values(r.gradients)?,
            assign: decode_values(r.assign)?,
            wait: Duration::from_millis(r.wait_ms),
            pull: r.pull,
            since: r.since.map(Into::into),
        })
    }
}

impl From<Command> for proto::Command {
    fn from(command: Command) -> Self {
        match command {
            Command::Heartbeat => proto::Command::Heartbeat,
            Command::Finish => proto::Command::Finish,
            Command::Shutdown => proto::Command::Shutdown,
            Command::Leave => proto::Command::Leave,
        }
    }
}

impl From<proto::Command> for Command {
    fn from(command: proto::Command) -> Self {
        match command {
            proto::Command::Heartbeat => Command::Heartbeat,
            proto::Command::Finish => Command::Finish,
            proto::Command::Shutdown => Command::Shutdown,
            proto::Command::Leave => Command::Leave,
        }
    }
}

/// Training task `worker`'s `command`.
pub fn control_request(worker: u32, command: Command) -> proto::ControlRequest {
    proto::ControlRequest {
        worker,
        command: proto::Command::from(command) as i32,
    }
}

/// A wait in whole milliseconds, as the wire carries it.
fn millis(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
}
