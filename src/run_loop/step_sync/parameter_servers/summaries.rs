//! The chief's summaries of the parameter servers: push rate, staleness, drops, pull time
//! and each ps's bytes served (load balance).

use std::time::Instant;

use super::session::PsSession;
use crate::distribute::ps::Command;
use crate::summary::SummaryWriter;

impl PsSession {
    /// Chief: `ps/push_per_sec`, `ps/staleness`, `ps/dropped`, `ps/pull_seconds` and each
    /// ps's `ps/<i>/bytes_served` per second since the last call.
    pub(super) fn write_summaries(&mut self, writer: &mut SummaryWriter, step: u64) {
        if self.pulls > 0 {
            writer.scalar(
                "ps/pull_seconds",
                self.pull_seconds / self.pulls as f64,
                step,
            );
            self.pull_seconds = 0.0;
            self.pulls = 0;
        }
        let Ok(counters) = self.replica.servers.control(Command::Heartbeat) else {
            return;
        };
        let now = Instant::now();
        if let Some((then, before)) = &self.last_counters {
            let seconds = (now - *then).as_secs_f64().max(1e-9);
            let (first, first_before) = (&counters[0], &before[0]);
            let applied = first
                .pushes_applied
                .saturating_sub(first_before.pushes_applied);
            writer.scalar("ps/push_per_sec", applied as f64 / seconds, step);
            writer.scalar(
                "ps/dropped",
                first
                    .pushes_dropped
                    .saturating_sub(first_before.pushes_dropped) as f64,
                step,
            );
            if applied > 0 {
                let staleness = first
                    .staleness_sum
                    .saturating_sub(first_before.staleness_sum);
                writer.scalar("ps/staleness", staleness as f64 / applied as f64, step);
            }
            for (i, (c, b)) in counters.iter().zip(before).enumerate() {
                let served = c.bytes_served.saturating_sub(b.bytes_served);
                writer.scalar(
                    &format!("ps/{i}/bytes_served"),
                    served as f64 / seconds,
                    step,
                );
            }
        }
        self.last_counters = Some((now, counters));
    }
}
