//! The accept loop: each connection admitted under the cap is served on a task of its own;
//! one past the cap with none idle to close is answered 503 and closed; a failed accept
//! (out of descriptors or memory) closes the connection idle longest and backs off.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::connection::{self, Timeouts};
use crate::connections::Connections;

/// First and longest pause after an accept fails for want of resources.
const FIRST_BACKOFF: Duration = Duration::from_millis(5);
const LONGEST_BACKOFF: Duration = Duration::from_secs(1);

/// Refusals answered at once; past them a refused connection is closed without an answer
/// (each answer holds a descriptor for up to [`REFUSAL_TIME`]).
const MOST_REFUSALS: usize = 32;
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Serves `router` on the connections `listener` accepts until `shutdown` completes, then
/// stops accepting and waits for the connections to close (idle ones at once, busy ones
/// after their answer).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    max_connections: usize,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let connections = Connections::new(max_connections);
    let refusals = Arc::new(AtomicUsize::new(0));
    let refused_log = Throttled::default();
    let failed_log = Throttled::default();
    let mut backoff = Duration::ZERO;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff = Duration::ZERO;
                // Answers are written whole; waiting to merge them with later writes only
                // adds latency.
                let _ = stream.set_nodelay(true);
                let admitted = tokio::select! {
                    admitted = connections.admit() => admitted,
                    () = &mut shutdown => break,
                };
                match admitted {
                    Some(admitted) => {
                        let router = router.clone();
                        tokio::spawn(async move {
                            let activity = Arc::clone(&admitted.activity);
                            connection::serve(stream, activity, router, timeouts).await;
                            drop(admitted);
                        });
                    }
                    None => {
                        if let Some(more) = refused_log.pass() {
                            tracing::warn!(
                                "refusing connections: all {} are busy (--max-connections){}",
                                connections.cap(),
                                more
                            );
                        }
                        refuse(stream, connections.cap(), &refusals);
                    }
                }
            }
            Err(e) if is_per_connection(&e) => {}
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or buffers: the pending connection
                // stays queued; closing an idle one frees a descriptor for it, and the
                // pause keeps the loop from spinning on the error.
                let freed = connections.close_idle_longest();
                backoff = (backoff * 2).clamp(FIRST_BACKOFF, LONGEST_BACKOFF);
                if let Some(more) = failed_log.pass() {
                    tracing::warn!(
                        "cannot accept a connection: {e}; {}retrying in {backoff:?}{more}",
                        if freed {
                            "closing the connection idle longest, "
                        } else {
                            ""
                        }
                    );
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = &mut shutdown => break,
                }
            }
        }
    }
    drop(listener);
    connections.close_all().await;
    Ok(())
}

/// Errors that end one pending connection, not the listener's ability to accept.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Answers 503 and closes, off the accept loop.
fn refuse(mut stream: TcpStream, cap: usize, refusals: &Arc<AtomicUsize>) {
    if refusals.fetch_add(1, Ordering::Relaxed) >= MOST_REFUSALS {
        refusals.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let refusals = Arc::clone(refusals);
    tokio::spawn(async move {
        let body = serde_json::json!({
            "error": format!(
                "the server is at its limit of {cap} connections (--max-connections) and \
                 none is idle: retry later"
            )
        })
        .to_string();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(REFUSAL_TIME, async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            // Reading what the client sent until it closes: closing with unread bytes
            // would reset the connection, and the reset can discard the answer.
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            io::Result::Ok(())
        })
        .await;
        refusals.fetch_sub(1, Ordering::Relaxed);
    });
}

/// A warning logged at most every ten seconds, with how many were left out meanwhile.
#[derive(Default)]
struct Throttled {
    last: Mutex<Option<(Instant, u64)>>,
}

impl Throttled {
    const EVERY: Duration = Duration::from_secs(10);

    /// `Some(note)` when this occurrence is to be logged, the note counting those left out.
    fn pass(&self) -> Option<String> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match *last {
            Some((at, ref mut skipped)) if now.duration_since(at) < Self::EVERY => {
                *skipped += 1;
                None
            }
            Some((_, skipped)) => {
                *last = Some((now, 0));
                Some(if skipped > 0 {
                    format!(" ({skipped} more since the last warning)")
                } else {
                    String::new()
                })
            }
            None => {
                *last = Some((now, 0));
                Some(String::new())
            }
        }
    }
}
