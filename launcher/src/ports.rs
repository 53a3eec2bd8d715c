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
        // Another test of this binary may take a released port before it is bound again
        // (the race the function's doc names): one of three draws must bind whole.
        let bound_again = (0..3).any(|_| {
            let ports = free_ports("127.0.0.1", 5).unwrap();
            assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 5);
            assert!(ports.iter().all(|port| *port > 0));
            let listeners: io::Result<Vec<_>> = (ports.iter())
                .map(|port| TcpListener::bind(("127.0.0.1", *port)))
                .collect();
            listeners.is_ok()
        });
        assert!(
            bound_again,
            "the ports were still held after free_ports returned"
        );
    }
}
