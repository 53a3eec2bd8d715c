//! What synchronising steps cost: bytes all-reduced and the time of each stage.

/// What synchronising steps cost since the counters were last taken. The stages overlap
/// (copying and applying run beside the all-reduce), so they add up to more than
/// `sync_seconds`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommStats {
    /// Steps synchronised.
    pub steps: u64,
    /// Bytes all-reduced (each rank's f32 buffer, summed over buckets and steps), whatever
    /// the compression on the wire.
    pub bytes: u64,
    /// Wall time inside the all-reduces: the wire and the reduction.
    pub seconds: f64,
    /// Wall time of whole synchronisations: from the first gradient read to the last one
    /// written back.
    pub sync_seconds: f64,
    /// Copying gradients off the device into the buckets.
    pub copy_seconds: f64,
    /// Encoding what is sent and summing what is received, inside the all-reduces.
    pub reduce_seconds: f64,
    /// Turning averaged buckets back into gradient tensors (onto the device).
    pub apply_seconds: f64,
    /// PowerSGD's matrix products and error feedback, on the device, between and around
    /// its two rounds of all-reduces (0 without it).
    pub low_rank_seconds: f64,
}

impl CommStats {
    /// Bus bandwidth in GB/s (NCCL's definition: algbw · 2(n−1)/n), comparable across
    /// cluster sizes.
    pub fn busbw_gbps(&self, world_size: usize) -> f64 {
        if self.seconds <= 0.0 || world_size < 2 {
            return 0.0;
        }
        let n = world_size as f64;
        self.bytes as f64 / self.seconds / 1e9 * 2.0 * (n - 1.0) / n
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &CommStats) {
        self.steps += other.steps;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.sync_seconds += other.sync_seconds;
        self.copy_seconds += other.copy_seconds;
        self.reduce_seconds += other.reduce_seconds;
        self.apply_seconds += other.apply_seconds;
        self.low_rank_seconds += other.low_rank_seconds;
    }

    /// Time inside the all-reduces spent waiting on the wire rather than computing.
    pub fn wire_seconds(&self) -> f64 {
        (self.seconds - self.reduce_seconds).max(0.0)
    }
}
