//! Tuning of the collectives.

use super::halving_doubling::HalvingDoubling;
use super::Compression;

/// Default size of one message of a collective: 1 MiB, well under gRPC's default 4 MiB limit.
pub const DEFAULT_SEGMENT_BYTES: usize = 1 << 20;

/// Segments a ring chunk is cut into at least, so that the pipeline has work in flight on
/// every link while the first segments are being added (NCCL cuts its chunks likewise).
const PIPELINE_SEGMENTS: usize = 8;

/// Smallest segment of a pipelined ring, in bytes: below that, per-message costs dominate.
const MIN_PIPELINE_SEGMENT_BYTES: usize = 64 << 10;

/// Bytes of each hop a ring all-reduce keeps in flight on a link by default: enough to keep
/// the link busy, and few enough that what a rank writes for its peer is still in the caches
/// when the peer reads it (a whole chunk at once sends 2× slower at 64–256 MiB on one host).
const DEFAULT_RING_WINDOW_BYTES: usize = 1 << 20;

/// Largest all-reduce, in bytes on the wire, that goes by halving and doubling by default
/// (over 4 ranks or more): below it the N − 1 hops of the ring cost more than its
/// pipeline saves.
const DEFAULT_HALVING_DOUBLING_BYTES: usize = 1 << 20;

/// How collectives cut their buffers into messages, and what the all-reduce sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveConfig {
    /// Largest payload of one message, in bytes: a ring chunk travels as segments of at
    /// most this size so that a large buffer streams instead of moving as one message.
    pub segment_bytes: usize,
    /// Bytes of each hop of a ring all-reduce in flight on a link at most: a rank sends the
    /// next segment of its first hop only as it receives one (at least one segment in
    /// flight; `usize::MAX`: the whole first hop at once).
    pub window_bytes: usize,
    /// All-reduces of at most this many bytes on the wire over a power of two of at least 4
    /// ranks, or an eighth of it over 5 or more, go by recursive halving and doubling:
    /// ⌊log₂ N⌋ exchanges each way, one more where N is not a power of two, where the ring
    /// makes N − 1 (0: always the ring).
    pub halving_doubling_bytes: usize,
    /// The format all-reduce values travel in (sums are kept in f32).
    pub compression: Compression,
    /// Threads of the calling rayon pool a pass over a large segment (encoding, summing,
    /// finalizing) may be split over; 1 (the default), or a caller in no pool: the calling
    /// thread alone.
    pub threads: usize,
    /// Ranks per machine, when every machine has as many and ranks are numbered machine by
    /// machine: large all-reduces then go hierarchically (Horovod's hierarchical
    /// all-reduce); 0 (the default): flat.
    pub machine_size: usize,
}

impl Default for CollectiveConfig {
    fn default() -> Self {
        Self {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            window_bytes: DEFAULT_RING_WINDOW_BYTES,
            halving_doubling_bytes: DEFAULT_HALVING_DOUBLING_BYTES,
            compression: Compression::None,
            threads: 1,
            machine_size: 0,
        }
    }
}

impl CollectiveConfig {
    /// The default configuration with messages of at most `segment_bytes`.
    pub fn with_segment_bytes(segment_bytes: usize) -> Self {
        Self {
            segment_bytes,
            ..Self::default()
        }
    }

    /// This configuration sending all-reduce values as `compression` says.
    pub fn with_compression(self, compression: Compression) -> Self {
        Self {
            compression,
            ..self
        }
    }

    /// This configuration keeping at most `window_bytes` of each ring hop in flight.
    pub fn with_window_bytes(self, window_bytes: usize) -> Self {
        Self {
            window_bytes,
            ..self
        }
    }

    /// This configuration sending all-reduces of at most `bytes` on the wire by halving and
    /// doubling where the world allows it (0: never).
    pub fn with_halving_doubling_bytes(self, bytes: usize) -> Self {
        Self {
            halving_doubling_bytes: bytes,
            ..self
        }
    }

    /// Whether an all-reduce of `len` values over `world_size` ranks goes by halving and
    /// doubling rather than round the ring: when that takes fewer exchanges (4 ranks and 5 or
    /// more; with 2 both are one exchange each way, with 3 both two), and few bytes.
    ///
    /// Outside a power of two, an eighth of the bytes: the hosts' hand-over adds a whole
    /// buffer each way to the longest path, which the exchanges saved pay for only below
    /// 88–282 KB on 5–7 ranks over 25 Gbit/s at 30 µs a hop (Horovod's cost model).
    pub fn halves_and_doubles(&self, len: usize, world_size: usize) -> bool {
        let limit = if world_size.is_power_of_two() {
            self.halving_doubling_bytes
        } else {
            self.halving_doubling_bytes / 8
        };
        HalvingDoubling::exchanges(world_size) + 1 < world_size
            && len.saturating_mul(self.compression.element_bytes()) <= limit
    }

    /// This configuration reducing large buffers hierarchically over machines of
    /// `machine_size` ranks each (ranks numbered machine by machine; 0: flat).
    pub fn with_machine_size(self, machine_size: usize) -> Self {
        Self {
            machine_size,
            ..self
        }
    }

    /// Whether an all-reduce of `len` values over `world_size` ranks goes hierarchically:
    /// over two machines or more of `machine_size` ranks each (two or more), for buffers
    /// that halving and doubling would not take.
    pub fn hierarchical(&self, len: usize, world_size: usize) -> bool {
        let k = self.machine_size;
        k >= 2
            && world_size > k
            && world_size.is_multiple_of(k)
            && len.saturating_mul(self.compression.element_bytes()) > self.halving_doubling_bytes
    }

    /// This configuration splitting its passes over large segments over up to `threads`
    /// threads of the pool it is called in.
    pub fn with_threads(self, threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            ..self
        }
    }

    /// Elements of `element_bytes` bytes per segment: at least one.
    pub fn segment_len(&self, element_bytes: usize) -> usize {
        (self.segment_bytes / element_bytes.max(1)).max(1)
    }

    /// Elements per segment of a ring all-reduce of `len` values over `world_size` ranks:
    /// each chunk cut into about `PIPELINE_SEGMENTS` segments, none smaller than 64 KiB
    /// on the wire (unless `segment_bytes` is) nor larger than `segment_bytes`. The same on
    /// every rank, since it depends only on the call's arguments.
    pub fn ring_segment_len(&self, len: usize, world_size: usize) -> usize {
        let width = self.compression.element_bytes();
        let largest = self.segment_len(width);
        let smallest = (MIN_PIPELINE_SEGMENT_BYTES / width).min(largest);
        let chunk = len.div_ceil(world_size.max(1));
        chunk.div_ceil(PIPELINE_SEGMENTS).clamp(smallest, largest)
    }

    /// Segments of each hop in flight per link for a ring all-reduce cut into segments of
    /// `segment_len` elements: as many as fit the window, at least one.
    pub fn ring_window(&self, segment_len: usize) -> usize {
        let segment_bytes = segment_len.saturating_mul(self.compression.element_bytes());
        (self.window_bytes / segment_bytes.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_hold_at_least_one_element() {
        let config = CollectiveConfig::with_segment_bytes(10);
        assert_eq!(config.segment_len(4), 2);
        assert_eq!(config.segment_len(1), 10);
        assert_eq!(CollectiveConfig::with_segment_bytes(0).segment_len(4), 1);
        assert_eq!(CollectiveConfig::default().segment_len(4), 1 << 18);
        assert_eq!(
            CollectiveConfig::with_segment_bytes(0).ring_segment_len(100, 2),
            1
        );
    }

    #[test]
    fn ring_segments_follow_the_message_size() {
        let config = CollectiveConfig::default();
        let mib = (1 << 20) / 4;
        // 1 MiB over 2 ranks: 512 KiB chunks in 8 segments of 64 KiB.
        assert_eq!(config.ring_segment_len(mib, 2), (64 << 10) / 4);
        // 64 MiB: 32 MiB chunks in segments of the 1 MiB maximum.
        assert_eq!(config.ring_segment_len(64 * mib, 2), mib);
        // Tiny buffers: one 64 KiB segment covers the chunk.
        assert_eq!(config.ring_segment_len(10, 4), (64 << 10) / 4);
        // In bf16 a segment carries twice the values for the same bytes.
        let bf16 = config.with_compression(Compression::Bf16);
        assert_eq!(bf16.ring_segment_len(64 * mib, 2), 2 * mib);
        assert_eq!(
            CollectiveConfig::with_segment_bytes(12).ring_segment_len(1000, 2),
            3
        );
    }

    #[test]
    fn small_all_reduces_halve_and_double_where_that_takes_fewer_exchanges() {
        let config = CollectiveConfig::default();
        let mib = (1 << 20) / 4;
        assert!(config.halves_and_doubles(mib, 4));
        assert!(config.halves_and_doubles(100, 8));
        assert!(!config.halves_and_doubles(mib + 1, 4));
        assert!(!config.halves_and_doubles(100, 2));
        assert!(!config.halves_and_doubles(100, 3));
        assert!(config.halves_and_doubles(100, 5));
        assert!(config.halves_and_doubles(mib / 8, 6));
        assert!(!config.halves_and_doubles(mib / 8 + 1, 6));
        // Bytes on the wire: in bf16 twice the values fit.
        let bf16 = config.with_compression(Compression::Bf16);
        assert!(bf16.halves_and_doubles(2 * mib, 4));
        assert!(!config
            .with_halving_doubling_bytes(0)
            .halves_and_doubles(1, 4));
    }

    #[test]
    fn the_window_holds_a_mebibyte_of_segments() {
        let config = CollectiveConfig::default();
        let mib = (1 << 20) / 4;
        // 1 MiB segments: one at a time; the MNIST network's 64 KiB ones: 16, more than
        // its chunks have, so a small all-reduce sends its whole first hop at once.
        assert_eq!(config.ring_window(mib), 1);
        assert_eq!(config.ring_window((64 << 10) / 4), 16);
        // The window is in bytes on the wire: bf16 segments of as many values weigh half.
        let bf16 = config.with_compression(Compression::Bf16);
        assert_eq!(bf16.ring_window(mib), 2);
        assert_eq!(config.with_window_bytes(0).ring_window(mib), 1);
        assert_eq!(
            config.with_window_bytes(usize::MAX).ring_window(1),
            usize::MAX / 4
        );
    }
}
