//! Test helpers: ranks as threads, and seeded random data.

use super::InMemoryTransport;

/// Runs `f` on every rank in its own thread; the results in rank order.
pub(crate) fn on_threads<R: Send>(
    ranks: Vec<InMemoryTransport>,
    f: impl Fn(&mut InMemoryTransport) -> R + Sync,
) -> Vec<R> {
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|mut t| scope.spawn(move || f(&mut t)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread panicked"))
            .collect()
    })
}

/// SplitMix64: a tiny seeded generator for test data.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` values uniform in [-1, 1).
    pub(crate) fn f32s(&mut self, len: usize) -> Vec<f32> {
        (0..len)
            .map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect()
    }

    /// `len` random bytes.
    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// The bit patterns of `values`, for bit-identity checks.
pub(crate) fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// A transport recording every message it sends: (from, to, bytes), into a log shared by
/// the ranks. Other calls reach `inner` through the trait's defaults.
pub(crate) struct Recording {
    pub(crate) inner: InMemoryTransport,
    pub(crate) sent: std::sync::Arc<std::sync::Mutex<Vec<(usize, usize, usize)>>>,
}

impl super::Transport for Recording {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn world_size(&self) -> usize {
        self.inner.world_size()
    }

    fn send(&mut self, to: usize, tag: u64, payload: Vec<u8>) -> super::Result<()> {
        let record = (self.inner.rank(), to, payload.len());
        self.sent.lock().expect("log").push(record);
        self.inner.send(to, tag, payload)
    }

    fn recv(&mut self, from: usize, tag: u64) -> super::Result<Vec<u8>> {
        self.inner.recv(from, tag)
    }
}
