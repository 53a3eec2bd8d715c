//! Free TCP ports for the tasks of a local cluster.

use std::io;
use std::net::TcpListener;

/// `count` distinct ports that were free on `host` a moment ago: each is bound with port 0,
/// read back, and released once all are read (so none repeats). A port can still be taken
/// by another process before its task binds it; TF's test clusters have the same race.
pub fn free_ports(host: &str, count: usize) -> io::Result<Vec<u16>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let listeners = (0..count)
        .map(|_| TcpListener::bind((bare, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|listener| Ok(listener.local_addr()?.port()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ports_are_distinct_and_free_again_after() {
        let ports = free_ports("127.0.0.1", 5).unwrap();
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 5);
        for port in ports {
            assert!(port > 0);
            TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
    }
}
