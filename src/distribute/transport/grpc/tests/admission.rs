//! Connections before authentication: idle ones beyond the cap are closed at once, the
//! others once their handshake is overdue, and a real peer still joins.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use super::{config, listeners, on_threads, try_connect_on};
use crate::distribute::{GrpcConfig, Transport};

/// Waits (at most `limit`) until `stream` is closed by the other end: end of file or reset.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut byte = [0; 64];
    while start.elapsed() < limit {
        match stream.read(&mut byte) {
            Ok(0) => return Some(start.elapsed()),
            // Whatever a server writes first (its HTTP/2 settings) is not a close.
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}

#[test]
fn idle_connections_cannot_keep_a_peer_out() {
    const CAP: usize = 8;
    const IDLE: usize = 60;
    let handshake = Duration::from_millis(1500);
    let (listeners, addresses) = listeners(2);
    // Time to join under a loaded machine (tests run side by side on two cores); the idle
    // connections alone would keep the peer out for minutes (the watcher holds each open
    // up to 10 s).
    let patient = GrpcConfig {
        connect_timeout: Duration::from_secs(60),
        ..config()
    };
    let limited = GrpcConfig {
        max_connections: Some(CAP),
        handshake_timeout: handshake,
        ..patient.clone()
    };
    // Every idle connection is queued before rank 0's server accepts anything.
    let mut idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| TcpStream::connect(&addresses[0]).unwrap())
        .collect();
    // One that starts a preface and stops short of it is no better than a silent one.
    idle[0].write_all(b"PRI * HTTP/2.0").unwrap();
    let start = Instant::now();
    let watched = thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            idle.iter_mut()
                .map(|stream| closed_within(stream, Duration::from_secs(10)))
                .collect::<Vec<_>>()
        });
        let ranks = try_connect_on(listeners, &addresses, vec![limited, patient]);
        let joined = start.elapsed();
        let mut ranks: Vec<_> = ranks.into_iter().map(|r| r.expect("connect")).collect();
        let mut one = ranks.pop().unwrap();
        let mut zero = ranks.pop().unwrap();
        one.send(0, 7, vec![1, 2, 3]).unwrap();
        assert_eq!(zero.recv(1, 7).unwrap(), vec![1, 2, 3]);
        zero.send(1, 8, vec![4]).unwrap();
        assert_eq!(one.recv(0, 8).unwrap(), vec![4]);
        thread::scope(|s| {
            s.spawn(|| zero.shutdown().unwrap());
            one.shutdown().unwrap();
        });
        (watcher.join().unwrap(), joined)
    });
    let (closes, joined) = watched;
    assert!(joined < Duration::from_secs(45), "{joined:?}");
    let mut at_once = 0;
    let mut after_timeout = 0;
    for (i, closed) in closes.into_iter().enumerate() {
        // Measured from when the watcher got to this connection, which is after rank 0
        // started: each one is closed within the handshake timeout and a margin.
        let closed = closed.unwrap_or_else(|| panic!("idle connection {i} is still open"));
        if closed < Duration::from_millis(500) {
            at_once += 1;
        } else {
            after_timeout += 1;
        }
    }
    assert!(
        at_once >= IDLE - CAP,
        "{at_once} closed at once, {after_timeout} later"
    );
    assert!(
        after_timeout <= CAP,
        "{at_once} closed at once, {after_timeout} later"
    );
}

#[test]
fn a_silent_connection_is_closed_after_the_handshake_timeout() {
    let handshake = Duration::from_millis(800);
    let (listeners, addresses) = listeners(2);
    let limited = GrpcConfig {
        handshake_timeout: handshake,
        ..config()
    };
    let mut silent = TcpStream::connect(&addresses[0]).unwrap();
    let start = Instant::now();
    let closed = thread::scope(|scope| {
        let watcher = scope.spawn(|| closed_within(&mut silent, Duration::from_secs(10)));
        let ranks = try_connect_on(listeners, &addresses, vec![limited, config()]);
        let closed = watcher.join().unwrap();
        let ranks = ranks.into_iter().map(|r| r.expect("connect")).collect();
        on_threads(ranks, |t| t.shutdown().unwrap());
        closed
    });
    let closed = closed.expect("the silent connection is closed");
    assert!(
        closed >= handshake.saturating_sub(Duration::from_millis(100))
            && closed < Duration::from_secs(5),
        "closed after {closed:?} (started {:?} ago)",
        start.elapsed()
    );
}
