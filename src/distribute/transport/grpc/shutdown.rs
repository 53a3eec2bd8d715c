//! Leaving the cluster: gracefully (every message acknowledged), after a failure (the
//! missing rank named to the others first), or as a crash would.

use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use super::control::{give_up_payload, GIVE_UP_TAG};
use super::outbound::Outbound;
use super::{GrpcTransport, RUNTIME_GRACE};
use crate::distribute::collective_fault::Result;

impl GrpcTransport {
    /// Leaves the cluster without losing a message: closes the stream to every peer and waits
    /// until each has acknowledged everything sent to it, then waits until every peer has
    /// closed its stream to this rank (it has shut down too, or is gone), then stops the
    /// server. Each wait is bounded by the peer timeout. Every rank may call it at the same
    /// time; a process can exit right after it returns, even after its last `send`.
    ///
    /// The error names the first peer that did not acknowledge or did not close in time.
    pub fn shutdown(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        let Some(runtime) = self.runtime.take() else {
            return Ok(());
        };
        let (me, timeout) = (self.rank, self.peer_timeout);
        let mut outbound: Vec<Outbound> =
            self.outbound.iter_mut().filter_map(Option::take).collect();
        // Close every stream and lane first, so that the peers acknowledge concurrently.
        outbound.iter_mut().for_each(Outbound::close);
        self.lanes.close();
        let deadline = tokio::time::Instant::now() + timeout;
        let acknowledged = runtime.block_on(async {
            let mut first = Ok(());
            for stream in &mut outbound {
                let acknowledged = stream.acknowledged(me, deadline, timeout).await;
                first = first.and(acknowledged);
            }
            first
        });
        // Each path of a peer's messages is counted on its own: the gRPC stream's count
        // covers what went over gRPC, the lane's what went over the lane.
        let acknowledged = acknowledged.and(self.lanes.acknowledged(deadline.into_std(), timeout));
        // The server and the lane readers keep running meanwhile: peers still sending to
        // this rank get their acknowledgements, so ranks shutting down together do not
        // wait on one another.
        let deadline = Instant::now() + timeout;
        let closed = self.inbound.wait_ended(deadline, timeout);
        // A peer opens its lane before it can close its stream: every lane into this rank
        // is known by now.
        let closed = closed.and(self.lanes.wait_ended(deadline, timeout));
        // A stream is over once its handler returned: the server may not have written the
        // acknowledgement yet. A graceful stop writes it before closing the connections.
        self.stop_server(&runtime, timeout);
        self.lanes.stop_listening();
        runtime.shutdown_timeout(RUNTIME_GRACE);
        acknowledged.and(closed)
    }

    /// Stops the server gracefully: it sends the answers of the calls that have one and
    /// closes its connections, waiting at most `timeout` for that.
    pub(super) fn stop_server(&mut self, runtime: &Runtime, timeout: Duration) {
        if let (Some(stop), Some(server)) = (self.stop_server.take(), self.server.take()) {
            let _ = stop.send(());
            let stopped = runtime.block_on(async { tokio::time::timeout(timeout, server).await });
            if stopped.is_err() {
                let rank = self.rank;
                tracing::warn!("the gRPC server of rank {rank} did not stop within {timeout:?}");
            }
        }
    }

    /// Leaves after a failure: tells every peer which rank this one gave up on, so that
    /// they name the same one rather than this rank, which leaves first — or, when no peer
    /// failed it (its own error: a full disk, say), this rank itself, so that the peers
    /// which would see a neighbour leave before it name it all the same; gives them a moment
    /// to read it; then drops every connection.
    pub(super) fn give_up(&mut self) {
        let Some(runtime) = self.runtime.as_ref() else {
            self.drop_connections();
            return;
        };
        let missing = self.gave_up_on.unwrap_or(self.rank);
        let me = self.rank;
        let mut outbound: Vec<Outbound> =
            self.outbound.iter_mut().filter_map(Option::take).collect();
        for stream in &mut outbound {
            let _ = stream.send(me, GIVE_UP_TAG, give_up_payload(missing));
            stream.close();
        }
        let grace = RUNTIME_GRACE.min(self.peer_timeout);
        let deadline = tokio::time::Instant::now() + grace;
        runtime.block_on(async {
            for stream in &mut outbound {
                let _ = stream.acknowledged(me, deadline, grace).await;
            }
        });
        self.drop_connections();
    }

    /// Drops every connection at once, as a crash would: peers see the connection lost.
    pub(super) fn drop_connections(&mut self) {
        self.lanes.cut();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(RUNTIME_GRACE);
        }
    }

    /// Simulates a crash of this rank.
    #[cfg(test)]
    pub(super) fn crash(mut self) {
        self.drop_connections();
    }
}

impl Drop for GrpcTransport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.drop_connections();
        } else if let Err(e) = self.close() {
            tracing::warn!(
                "rank {} shut its gRPC transport down uncleanly: {e}",
                self.rank
            );
        }
    }
}
