//! [`Limits`]: how much one server takes on — request sizes, the instances decoded at once,
//! open connections and how long a connection may stay quiet.

use std::time::Duration;

/// Request bodies above this many bytes are refused with 413 (TF Serving's default).
pub const DEFAULT_BODY_LIMIT: usize = 16 << 20;

/// Instances one request may hold; more get 413. Ten of TF Serving's default batches
/// (1,000 instances): a 10,000-instance Iris request takes about 0.1 s and tens of MB in a
/// release build, where 800,000 held a core for 108 s and took 3.1 GB.
pub const DEFAULT_MAX_INSTANCES_PER_REQUEST: usize = 10_000;

/// Instances decoded or being predicted at once over every request: four of the largest
/// requests, as many as a version has model copies.
pub const DEFAULT_MAX_INSTANCES_IN_FLIGHT: usize = 4 * DEFAULT_MAX_INSTANCES_PER_REQUEST;

/// TF Serving's REST timeout (`--rest_api_timeout_in_ms`), for a request head to arrive
/// once it has started, for its body to arrive once the head has, and for a connection to
/// stay idle.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most connections a default cap allows, whatever the descriptor limit: each idle
/// connection holds buffers, so a very high limit is no reason to keep that many.
const MOST_CONNECTIONS: usize = 4096;

/// Descriptors left for what is not a connection: the listener, the runtime, model files
/// read by a rescan, the refusals under way.
const RESERVED_DESCRIPTORS: u64 = 64;

/// What a server accepts; [`Limits::default`] gives the `estimator-serve` defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Most instances (rows, columnar values, examples) in one request (413 beyond).
    pub max_instances_per_request: usize,
    /// The decoding budget: most instances decoded or being predicted at once over all
    /// requests; a request waits until its instances fit.
    pub max_instances_in_flight: usize,
    /// Most open connections. Past it, the connection idle longest is closed to make room;
    /// with none idle, the new one is answered 503 and closed.
    pub max_connections: usize,
    /// Longest a request head may take from its first byte (`None`: no limit).
    pub header_read_timeout: Option<Duration>,
    /// Longest a connection may stay open with no request under way (`None`: no limit).
    pub idle_timeout: Option<Duration>,
    /// Longest a request body may take to arrive once its head has (`None`: no limit);
    /// past it the request is answered 408 and its connection closed.
    pub body_read_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_BODY_LIMIT,
            max_instances_per_request: DEFAULT_MAX_INSTANCES_PER_REQUEST,
            max_instances_in_flight: DEFAULT_MAX_INSTANCES_IN_FLIGHT,
            max_connections: default_max_connections(),
            header_read_timeout: Some(DEFAULT_TIMEOUT),
            idle_timeout: Some(DEFAULT_TIMEOUT),
            body_read_timeout: Some(DEFAULT_TIMEOUT),
        }
    }
}

/// The connection cap that keeps this process inside its descriptor limit (the soft
/// `RLIMIT_NOFILE`), so that accepting never fails for want of descriptors while idle
/// connections could be closed instead; at most 4,096.
pub fn default_max_connections() -> usize {
    let soft = descriptor_limit();
    let usable = soft - RESERVED_DESCRIPTORS.min(soft / 2);
    usize::try_from(usable)
        .unwrap_or(usize::MAX)
        .clamp(1, MOST_CONNECTIONS)
}

#[cfg(unix)]
fn descriptor_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

#[cfg(not(unix))]
fn descriptor_limit() -> u64 {
    // Windows' sockets are handles with no per-process limit like RLIMIT_NOFILE.
    MOST_CONNECTIONS as u64 + RESERVED_DESCRIPTORS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_stays_inside_the_descriptor_limit() {
        let cap = default_max_connections() as u64;
        assert!(cap >= 1);
        assert!(cap <= MOST_CONNECTIONS as u64);
        assert!(cap < descriptor_limit(), "{cap} >= {}", descriptor_limit());
    }
}
