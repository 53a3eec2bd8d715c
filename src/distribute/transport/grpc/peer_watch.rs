//! What this rank knows of each peer's liveness: when its stream last delivered anything
//! (a message or a heartbeat), or how it ended. A wait for one peer uses it to name the
//! peer that is actually missing — the same one on every rank — rather than the healthy
//! neighbour blocked behind it, and to warn, while still waiting, which peers have gone
//! quiet (Horovod's stall inspector).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often an idle stream carries a heartbeat, for a peer timeout of `peer_timeout`:
/// often enough that a silent peer stands out well within the timeout.
pub(super) fn heartbeat_interval(peer_timeout: Duration) -> Duration {
    (peer_timeout / 10).clamp(Duration::from_millis(100), Duration::from_secs(1))
}

/// How a peer's stream to this rank stands.
#[derive(Debug, Clone)]
enum Seen {
    /// Delivered something at this instant (or, before anything arrived, the watch began).
    Heard(Instant),
    /// Ended gracefully: the peer shut down.
    ShutDown,
    /// Broke: the peer crashed or the connection was cut.
    Lost(String),
    /// Gave up, finding this rank missing.
    GaveUp(usize),
}

/// Why a peer is missing.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Missing {
    /// Another peer gave up on it (that peer, by rank).
    GaveUpOn(usize),
    /// Nothing for this long: stopped, hung, or cut off without a reset.
    Silent(Duration),
    /// Its stream broke, for this reason.
    Lost(String),
}

/// The liveness of every peer of one rank, updated by the streams into it.
pub(super) struct PeerWatch {
    rank: usize,
    names: Vec<String>,
    /// How often peers send heartbeats when idle.
    pub(super) heartbeat: Duration,
    /// How long a wait may last before it is reported as a stall.
    pub(super) stall_warning: Duration,
    seen: Mutex<Vec<Seen>>,
    /// The peers stall warnings named since [`PeerWatch::take_stalled`] last ran.
    stalled: Mutex<BTreeSet<usize>>,
}

impl PeerWatch {
    /// The watch of `rank` over `world_size` ranks named `names` (missing names read
    /// "rank N"), starting now.
    pub(super) fn new(
        rank: usize,
        world_size: usize,
        names: Vec<String>,
        heartbeat: Duration,
        stall_warning: Duration,
    ) -> Self {
        let now = Instant::now();
        Self {
            rank,
            names,
            heartbeat,
            stall_warning,
            seen: Mutex::new(vec![Seen::Heard(now); world_size]),
            stalled: Mutex::new(BTreeSet::new()),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Vec<Seen>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `peer`'s stream (or lane) delivered something. A peer that gave up keeps saying whom
    /// it gave up on: its lane may still bring what it sent before.
    pub(super) fn heard(&self, peer: usize) {
        if let Some(seen) = self.seen().get_mut(peer) {
            if !matches!(seen, Seen::GaveUp(_)) {
                *seen = Seen::Heard(Instant::now());
            }
        }
    }

    /// `peer` gave up, finding `missing` missing.
    pub(super) fn gave_up(&self, peer: usize, missing: usize) {
        if let Some(seen) = self.seen().get_mut(peer) {
            *seen = Seen::GaveUp(missing);
        }
    }

    /// `peer`'s stream ended: gracefully, or broken for `reason`. A peer that gave up keeps
    /// saying whom it gave up on.
    pub(super) fn ended(&self, peer: usize, broken: Option<String>) {
        if let Some(seen) = self.seen().get_mut(peer) {
            if matches!(seen, Seen::GaveUp(_)) {
                return;
            }
            *seen = match broken {
                None => Seen::ShutDown,
                Some(reason) => Seen::Lost(reason),
            };
        }
    }

    /// The peers missing at `now`: those another peer gave up on first (the original
    /// cause, so every rank names the same), then broken streams, then peers silent for at
    /// least `silence`, longest first. Peers that shut down are not missing.
    pub(super) fn missing(&self, now: Instant, silence: Duration) -> Vec<(usize, Missing)> {
        let seen = self.seen();
        let mut given_up = Vec::new();
        let mut lost = Vec::new();
        let mut silent = Vec::new();
        for (peer, seen) in seen.iter().enumerate().filter(|(p, _)| *p != self.rank) {
            match seen {
                Seen::GaveUp(missing) => given_up.push((*missing, Missing::GaveUpOn(peer))),
                Seen::Lost(reason) => lost.push((peer, Missing::Lost(reason.clone()))),
                Seen::Heard(at) if now.saturating_duration_since(*at) >= silence => {
                    silent.push((peer, now.saturating_duration_since(*at)))
                }
                _ => {}
            }
        }
        silent.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        given_up.extend(lost);
        given_up.extend(silent.into_iter().map(|(p, d)| (p, Missing::Silent(d))));
        given_up
    }

    /// The name of rank `rank` (`chief:0`, `worker:2`), or "rank N".
    pub(super) fn name(&self, rank: usize) -> String {
        self.names
            .get(rank)
            .cloned()
            .unwrap_or_else(|| format!("rank {rank}"))
    }

    /// How many distinct peers stall warnings named since the last call.
    pub(super) fn take_stalled(&self) -> usize {
        let mut stalled = self.stalled.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *stalled).len()
    }

    /// Logs that this rank has waited `waited` for `peer`, naming the peers that went quiet
    /// (or `peer`, when every task still sends heartbeats).
    pub(super) fn warn_stall(&self, peer: usize, waited: Duration, now: Instant) {
        let quiet = self.missing(now, self.heartbeat * 2);
        {
            let mut stalled = self.stalled.lock().unwrap_or_else(|e| e.into_inner());
            if quiet.is_empty() {
                stalled.insert(peer);
            } else {
                stalled.extend(quiet.iter().map(|(p, _)| *p));
            }
        }
        let me = self.name(self.rank);
        let awaited = self.name(peer);
        if quiet.is_empty() {
            tracing::warn!(
                "stalled: {me} has waited {waited:.1?} for {awaited}, which is alive; every \
                 task still sends heartbeats (a slow step?)"
            );
            return;
        }
        let quiet: Vec<String> = quiet
            .iter()
            .map(|(p, why)| match why {
                Missing::Silent(d) => format!("{} (silent for {d:.1?})", self.name(*p)),
                Missing::Lost(reason) => format!("{} (connection lost: {reason})", self.name(*p)),
                Missing::GaveUpOn(by) if by == p => {
                    format!("{} (failed and left)", self.name(*p))
                }
                Missing::GaveUpOn(by) => {
                    format!("{} ({} gave up on it)", self.name(*p), self.name(*by))
                }
            })
            .collect();
        tracing::warn!(
            "stalled: {me} has waited {waited:.1?} for {awaited}; not arrived: {}",
            quiet.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_silent_peer_comes_first_after_the_lost_ones() {
        let start = Instant::now();
        let watch = PeerWatch::new(0, 4, vec![], Duration::from_millis(100), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(30));
        watch.heard(2);
        watch.ended(3, Some("reset".into()));
        let later = start + Duration::from_millis(60);
        let missing = watch.missing(later, Duration::from_millis(40));
        assert_eq!(missing[0], (3, Missing::Lost("reset".into())));
        assert_eq!(missing[1].0, 1);
        assert_eq!(missing.len(), 2, "{missing:?}");
        watch.ended(1, None);
        assert_eq!(watch.missing(later, Duration::ZERO).len(), 2);
        assert_eq!(watch.name(2), "rank 2");
    }

    #[test]
    fn heartbeats_come_ten_times_per_timeout_within_bounds() {
        assert_eq!(
            heartbeat_interval(Duration::from_secs(5)),
            Duration::from_millis(500)
        );
        assert_eq!(
            heartbeat_interval(Duration::from_secs(60)),
            Duration::from_secs(1)
        );
        assert_eq!(
            heartbeat_interval(Duration::from_millis(200)),
            Duration::from_millis(100)
        );
    }
}
