//! The chief's summaries of the parameter servers: push rate, staleness, drops, pull time
//! and each ps's bytes served (load balance).

use std::time::Instant;

use super::super::messages::Command;
use super::PsSession;

impl PsSession {
    /// Chief: `ps/push_per_sec`, `ps/staleness`, `ps/dropped`, `ps/pull_seconds` and each
    /// ps's `ps/<i>/bytes_served` per second since the last call, as (tag, value).
    pub fn summaries(&mut self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if self.pulls > 0 {
            out.push((
                "ps/pull_seconds".into(),
                self.pull_seconds / self.pulls as f64,
            ));
            self.pull_seconds = 0.0;
            self.pulls = 0;
        }
        let Ok(counters) = self.replica.servers.control(Command::Heartbeat) else {
            return out;
        };
        let now = Instant::now();
        if let Some((then, before)) = &self.last_counters {
            let seconds = (now - *then).as_secs_f64().max(1e-9);
            let (first, first_before) = (&counters[0], &before[0]);
            let applied = first
                .pushes_applied
                .saturating_sub(first_before.pushes_applied);
            out.push(("ps/push_per_sec".into(), applied as f64 / seconds));
            let dropped = first
                .pushes_dropped
                .saturating_sub(first_before.pushes_dropped);
            out.push(("ps/dropped".into(), dropped as f64));
            if applied > 0 {
                let staleness = first
                    .staleness_sum
                    .saturating_sub(first_before.staleness_sum);
                out.push(("ps/staleness".into(), staleness as f64 / applied as f64));
            }
            for (i, (c, b)) in counters.iter().zip(before).enumerate() {
                let served = c.bytes_served.saturating_sub(b.bytes_served);
                out.push((format!("ps/{i}/bytes_served"), served as f64 / seconds));
            }
        }
        self.last_counters = Some((now, counters));
        out
    }
}
