//! [`Connections`]: the open connections of a server, held under a cap. A connection past
//! the cap takes the place of the one idle longest (as nginx reuses keep-alive
//! connections), so idle clients cannot keep a working one out; with none idle it is
//! refused. It waits for that place to be given up, so that a burst of connections never
//! holds more descriptors than the cap allows.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::connection::Activity;

pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Arc<Activity>>>,
    next_id: AtomicU64,
    cap: usize,
    /// Signalled whenever a connection leaves.
    left: Notify,
}

enum Admission {
    Admitted(Admitted),
    /// A connection is closing; its place is free once it has gone.
    Wait,
    /// Every connection is busy.
    Full,
}

/// Longest a new connection waits for a closing one to go before looking again.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// A place among the open connections, given up when dropped.
pub(crate) struct Admitted {
    id: u64,
    pub(crate) activity: Arc<Activity>,
    connections: Arc<Connections>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections.open().remove(&self.id);
        self.connections.left.notify_waiters();
    }
}

impl Connections {
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::default(),
            next_id: AtomicU64::new(0),
            cap: cap.max(1),
            left: Notify::new(),
        })
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    fn open(&self) -> MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection; at the cap, the connection idle longest is asked to
    /// close and its place taken once it has gone. `None`: every connection is busy.
    pub(crate) async fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut waited_long = false;
        loop {
            let left = self.left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            match self.try_admit(waited_long) {
                Admission::Admitted(admitted) => return Some(admitted),
                Admission::Full => return None,
                Admission::Wait => {
                    waited_long = tokio::time::timeout(LOOK_AGAIN, left).await.is_err();
                }
            }
        }
    }

    /// With `waited_long`, the connections already closing are slow to go (one asked to
    /// close as its request arrived finishes that request first), so another idle one is
    /// asked to close too.
    fn try_admit(self: &Arc<Self>, waited_long: bool) -> Admission {
        let mut open = self.open();
        if open.len() >= self.cap {
            let closing = !waited_long && open.values().any(|a| a.is_closing());
            if closing || close_idle_longest(&open) {
                return Admission::Wait;
            }
            return Admission::Full;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new());
        open.insert(id, Arc::clone(&activity));
        Admission::Admitted(Admitted {
            id,
            activity,
            connections: Arc::clone(self),
        })
    }

    /// Asks the connection idle longest to close (freeing its descriptor); false if none
    /// is idle.
    pub(crate) fn close_idle_longest(&self) -> bool {
        close_idle_longest(&self.open())
    }

    /// Asks every connection to close (idle ones at once, busy ones after their answer)
    /// and waits until all have.
    pub(crate) async fn close_all(&self) {
        loop {
            let left = self.left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            {
                let open = self.open();
                if open.is_empty() {
                    return;
                }
                for activity in open.values() {
                    activity.close();
                }
            }
            left.await;
        }
    }
}

fn close_idle_longest(open: &HashMap<u64, Arc<Activity>>) -> bool {
    let idle_longest = open
        .values()
        .filter_map(|a| a.idle_since().map(|since| (since, a)))
        .min_by_key(|(since, _)| *since);
    match idle_longest {
        Some((_, activity)) => {
            activity.close();
            true
        }
        None => false,
    }
}
