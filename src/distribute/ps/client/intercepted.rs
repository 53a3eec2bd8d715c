//! For tests: an in-memory client whose initialisations and pulls pass through hooks — a
//! chief caught between two ps tasks, ps tasks whose steps parted, a test told when a pull
//! is on its way (so that it acts while the ps holds it, without sleeping).

use std::time::Duration;

use super::super::messages::{Command, Counters, Init, Pull, Pulled, Push, Pushed, Snapshot};
use super::{InMemoryParameterServers, PsClient, PsClientConfig};
use crate::error::Result;

/// What an intercepted client does with the chief's initialisations.
pub(crate) type InitHook =
    Box<dyn Fn(&InMemoryParameterServers, Vec<Init>) -> Result<()> + Send + Sync>;

/// What an intercepted client does before it sends a pull.
pub(crate) type PullHook = Box<dyn Fn(&[Pull]) + Send + Sync>;

/// An in-memory client with hooks; see the [module docs](self).
pub(crate) struct Intercepted {
    inner: InMemoryParameterServers,
    on_init: Option<InitHook>,
    on_pull: Option<PullHook>,
}

impl Intercepted {
    /// `inner`, passing everything through.
    pub(crate) fn new(inner: InMemoryParameterServers) -> Self {
        Self {
            inner,
            on_init: None,
            on_pull: None,
        }
    }

    /// Initialisations go through `hook` instead.
    pub(crate) fn on_init(
        mut self,
        hook: impl Fn(&InMemoryParameterServers, Vec<Init>) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_init = Some(Box::new(hook));
        self
    }

    /// `hook` sees every pull (a request per ps) before it is sent.
    pub(crate) fn on_pull(mut self, hook: impl Fn(&[Pull]) + Send + Sync + 'static) -> Self {
        self.on_pull = Some(Box::new(hook));
        self
    }
}

impl std::fmt::Debug for Intercepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercepted")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl PsClient for Intercepted {
    fn init(&self, inits: Vec<Init>) -> Result<()> {
        match &self.on_init {
            Some(hook) => hook(&self.inner, inits),
            None => self.inner.init(inits),
        }
    }
    fn pull(&self, pulls: Vec<Pull>) -> Result<Vec<Pulled>> {
        if let Some(hook) = &self.on_pull {
            hook(&pulls);
        }
        self.inner.pull(pulls)
    }
    fn push(&self, pushes: Vec<Push>) -> Result<Vec<Pushed>> {
        self.inner.push(pushes)
    }
    fn snapshot(&self) -> Result<Vec<Snapshot>> {
        self.inner.snapshot()
    }
    fn control(&self, command: Command) -> Result<Vec<Counters>> {
        self.inner.control(command)
    }
    fn start_heartbeat(&mut self, every: Duration) {
        self.inner.start_heartbeat(every)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn worker(&self) -> u32 {
        self.inner.worker()
    }
    fn config(&self) -> &PsClientConfig {
        self.inner.config()
    }
}
