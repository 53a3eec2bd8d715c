//! Ps tasks as shards of this process, and a training task's client that calls them
//! directly with the crate's messages: the same rules and the same errors as over gRPC,
//! without sockets or encoding.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use super::super::shard::{Shard, ShardFault};
use super::super::variable_optimizer::VariableOptimizer;
use super::{PsClient, PsClientConfig, PsFault};
use crate::error::{Error, Result};

/// The ps tasks of a cluster held in this process, one `Shard` each; see the
/// docs of `src/distribute/ps/client/in_memory.rs`. Cloning shares the shards.
#[derive(Debug, Clone)]
pub struct InMemoryPs {
    shards: Arc<[Shard]>,
}

impl InMemoryPs {
    /// `num_ps` uninitialised ps tasks, each updating with an optimizer `optimizer` makes;
    /// `chief_name` ("chief:0") names the chief in the errors training tasks get.
    pub fn start(
        num_ps: usize,
        optimizer: impl Fn() -> VariableOptimizer,
        chief_name: &str,
    ) -> Self {
        Self {
            shards: (0..num_ps)
                .map(|_| Shard::new(optimizer(), chief_name.to_string()))
                .collect(),
        }
    }

    /// Training task `worker`'s client of these ps tasks.
    pub fn client(&self, worker: usize, config: PsClientConfig) -> InMemoryParameterServers {
        InMemoryParameterServers {
            shards: Arc::clone(&self.shards),
            worker: worker as u32,
            config,
            heartbeat: None,
        }
    }

    /// The shards, for tests that supervise them as ps tasks would.
    #[cfg(test)]
    pub(crate) fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// Ps `ps` restarted: it lost its variables, and updates with `optimizer` afresh.
    #[cfg(test)]
    pub(crate) fn restart(&self, ps: usize, optimizer: VariableOptimizer) {
        self.shards[ps].restart(optimizer);
    }
}

/// Every ps task of an [`InMemoryPs`], seen from one training task.
#[derive(Debug)]
pub struct InMemoryParameterServers {
    shards: Arc<[Shard]>,
    worker: u32,
    config: PsClientConfig,
    heartbeat: Option<Heartbeat>,
}

impl InMemoryParameterServers {
    /// Runs `call` with `inputs[i]` on shard `i`, all at once (a synchronous push waits for
    /// the other training tasks on every ps together, as over gRPC); the replies in ps
    /// order, or the first failure in ps order.
    fn on_all<R, T, F>(&self, inputs: Vec<R>, call: F) -> Result<Vec<T>>
    where
        R: Send,
        T: Send,
        F: Fn(&Shard, R) -> Result<T> + Sync,
    {
        if inputs.len() != self.shards.len() {
            return Err(Error::Config(format!(
                "{} request(s) for {} ps task(s)",
                inputs.len(),
                self.shards.len()
            )));
        }
        let replies: Vec<Result<T>> = if self.shards.len() == 1 {
            inputs
                .into_iter()
                .map(|input| call(&self.shards[0], input))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let calls: Vec<_> = self
                    .shards
                    .iter()
                    .zip(inputs)
                    .map(|(shard, input)| scope.spawn(|| call(shard, input)))
                    .collect();
                calls
                    .into_iter()
                    .map(|call| call.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                    .collect()
            })
        };
        replies
            .into_iter()
            .enumerate()
            .map(|(ps, reply)| reply.map_err(|error| refused(ps, error)))
            .collect()
    }

    fn to_every_ps(&self) -> Vec<()> {
        vec![(); self.shards.len()]
    }
}

/// A refused call as the error that names the task at fault, as the gRPC client reports it.
fn refused(ps: usize, error: Error) -> Error {
    let name = format!("ps:{ps}");
    let Error::Shard(fault) = error else {
        // Shards refuse with their faults only; as over gRPC, anything else names the ps.
        return Error::Config(format!("{name}: {error}"));
    };
    match fault {
        ShardFault::NotInitialised => Error::Ps(PsFault::NotInitialised { ps }),
        ShardFault::ChiefLost { ref chief, .. } => Error::PeerLost {
            task: chief.clone(),
            message: format!("{fault} ({name} says)"),
        },
        ShardFault::SyncTimeout { ref missing, .. } => Error::Ps(PsFault::TasksMissing {
            ranks: missing.clone(),
            message: format!("{fault} ({name} says)"),
        }),
        fault => Error::Config(format!("{name}: {fault}")),
    }
}

impl PsClient for InMemoryParameterServers {
    fn init(&self, inits: Vec<Init>) -> Result<()> {
        self.on_all(inits, Shard::init)?;
        Ok(())
    }

    fn pull(&self, pulls: Vec<Pull>) -> Result<Vec<Pulled>> {
        self.on_all(pulls, |shard, pull| shard.pull(self.worker, pull))
    }

    fn push(&self, pushes: Vec<Push>) -> Result<Vec<Pushed>> {
        self.on_all(pushes, Shard::push)
    }

    fn snapshot(&self) -> Result<Vec<Snapshot>> {
        self.on_all(self.to_every_ps(), |shard, ()| shard.snapshot())
    }

    fn control(&self, command: Command) -> Result<Vec<Counters>> {
        self.on_all(self.to_every_ps(), |shard, ()| {
            shard.control(self.worker, command)
        })
    }

    fn start_heartbeat(&mut self, every: Duration) {
        self.heartbeat = Heartbeat::start(Arc::clone(&self.shards), self.worker, every);
    }

    fn len(&self) -> usize {
        self.shards.len()
    }

    fn worker(&self) -> u32 {
        self.worker
    }

    fn config(&self) -> &PsClientConfig {
        &self.config
    }
}

/// A thread telling every shard that a training task is alive, until dropped.
#[derive(Debug)]
struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    fn start(shards: Arc<[Shard]>, worker: u32, every: Duration) -> Option<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("estimator-ps-heartbeat".into())
            .spawn(move || loop {
                for shard in shards.iter() {
                    // A failed shard is the training loop's to report.
                    let _ = shard.control(worker, Command::Heartbeat);
                }
                if !matches!(stopped.recv_timeout(every), Err(RecvTimeoutError::Timeout)) {
                    break;
                }
            });
        match thread {
            Ok(thread) => Some(Self {
                stop: Some(stop),
                thread: Some(thread),
            }),
            Err(e) => {
                tracing::warn!("cannot start the ps heartbeat: {e}");
                None
            }
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        // Hanging up wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
