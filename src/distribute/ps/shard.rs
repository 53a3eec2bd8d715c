//! One ps task's shard of the variables: the update rules as a state machine without locks,
//! clocks or I/O ([`ShardMachine`]), and the driver that shares it between the threads of a
//! server ([`Shard`]).

mod driver;
mod machine;
mod push;
mod shard_fault;
mod supervise;
#[cfg(test)]
mod tests;

pub use driver::Shard;
pub use machine::{Progress, ShardMachine, CHIEF_RANK};
pub use shard_fault::ShardFault;
pub use supervise::{Patience, Verdict};
