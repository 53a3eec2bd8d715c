//! Tuning of the collectives.

/// Default size of one message of a collective: 1 MiB, well under gRPC's default 4 MiB limit.
pub const DEFAULT_SEGMENT_BYTES: usize = 1 << 20;

/// How collectives cut their buffers into messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveConfig {
    /// Largest payload of one message, in bytes: a ring chunk travels as segments of this size
    /// so that a large buffer streams instead of moving as one message.
    pub segment_bytes: usize,
}

impl Default for CollectiveConfig {
    fn default() -> Self {
        Self {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

impl CollectiveConfig {
    /// Elements of `element_bytes` bytes per segment: at least one.
    pub fn segment_len(&self, element_bytes: usize) -> usize {
        (self.segment_bytes / element_bytes.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_hold_at_least_one_element() {
        let config = CollectiveConfig { segment_bytes: 10 };
        assert_eq!(config.segment_len(4), 2);
        assert_eq!(config.segment_len(1), 10);
        assert_eq!(CollectiveConfig { segment_bytes: 0 }.segment_len(4), 1);
        assert_eq!(CollectiveConfig::default().segment_len(4), 1 << 18);
    }
}
