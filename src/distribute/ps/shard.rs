//! One ps task's shard of the variables: the update rules as a state machine without locks,
//! clocks or I/O ([`ShardMachine`]), and the driver that shares it between the threads of a
//! server ([`Shard`]).

mod driver;
mod error;
mod machine;
mod push;
mod supervise;
#[cfg(test)]
mod tests;

pub use driver::Shard;
pub use error::ShardError;
pub use machine::{Progress, ShardMachine, CHIEF_RANK};
pub use supervise::{Patience, Verdict};
