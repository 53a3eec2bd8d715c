//! [`Background`]: a [`Server`] on its own thread and runtime, stopped when dropped — for
//! programs that embed a server, tests and benchmarks.

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::server::Server;

/// A server answering on [`Background::address`] until dropped; dropping it finishes the
/// requests under way, then returns.
pub struct Background {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves on `address` (`127.0.0.1:0`: a free port) from a thread of its own, looking
    /// for new versions every `poll` (zero: never).
    pub fn spawn(self, address: &str, poll: Duration) -> std::io::Result<Background> {
        let runtime = tokio::runtime::Runtime::new()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(address))?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let served = runtime.block_on(self.run(listener, poll, async {
                let _ = stopped.await;
            }));
            if let Err(e) = served {
                tracing::error!("serving on {address}: {e}");
            }
        });
        Ok(Background {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Background {
    /// Where the server listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
