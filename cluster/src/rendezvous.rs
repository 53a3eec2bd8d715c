//! The rendezvous of the ranks a launcher started (`launched.rs`): each rank picks the port
//! its gRPC server will listen on, tells rank 0 its address in one line of JSON, and rank 0,
//! once every rank has joined, answers each with the whole list — which becomes the same
//! cluster TF_CONFIG would have described (rank 0 the chief, rank r worker r − 1).
//!
//! Plain TCP and std::net, bounded by one deadline: it runs once, before any runtime exists.
//! Each rank holds its chosen port bound until the answer has come, so no two ranks of one
//! host are given the same port; it is released just before the transport binds it.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::launched::{host_port, LaunchedRank};
use crate::{ClusterConfig, ClusterSpec, Error, Task, TaskType, CLUSTER_TOKEN};

/// Longest a connection to rank 0 may take to say who it is: a stranger (a port scanner, a
/// health check) holds rank 0 up no longer than this.
const JOIN_READ: Duration = Duration::from_secs(5);
/// Longest one dial of rank 0 may take before the next.
const DIAL: Duration = Duration::from_secs(2);
/// Pause between dials of a rank 0 not listening yet.
const REDIAL: Duration = Duration::from_millis(100);
/// Largest join message read.
const MAX_JOIN: u64 = 64 * 1024;

/// What a rank tells rank 0.
#[derive(Debug, Serialize, Deserialize)]
struct Join {
    rank: usize,
    world_size: usize,
    address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

/// What rank 0 answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    /// Every rank's address, by rank.
    Addresses(Vec<String>),
    /// Why this rank cannot join.
    Refused(String),
}

/// Meets the other ranks of `me`'s world (the cluster `token` checked when one is set) and
/// returns the cluster they form, within `timeout`.
pub(crate) fn rendezvous(
    me: &LaunchedRank,
    token: Option<&str>,
    timeout: Duration,
) -> Result<ClusterConfig, Error> {
    let deadline = Instant::now() + timeout;
    let addresses = if me.rank == 0 {
        gather(me, token, deadline, timeout)?
    } else {
        join(me, token, deadline, timeout)?
    };
    let mut addresses = addresses.into_iter();
    let cluster = ClusterSpec {
        chief: addresses.next(),
        workers: addresses.collect(),
        ps: Vec::new(),
        evaluator: None,
    };
    let task = match me.rank {
        0 => Task {
            kind: TaskType::Chief,
            index: 0,
        },
        rank => Task {
            kind: TaskType::Worker,
            index: rank - 1,
        },
    };
    Ok(ClusterConfig::Distributed { cluster, task })
}

/// The ranks disagree: a restart cannot mend it.
fn refused(message: impl Into<String>) -> Error {
    Error::RendezvousRefused(message.into())
}

/// A rank is missing or rank 0 is out of reach: a restart can mend it.
fn lost(message: impl Into<String>) -> Error {
    Error::RendezvousLost(message.into())
}

/// The address rank 0 listens on: its loopback address when `MASTER_ADDR` is one (as the
/// gRPC transport does), every interface otherwise (the host may be a name of a service).
fn listen_ip(host: &str) -> IpAddr {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) if ip.is_loopback() => ip,
        Ok(IpAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ if host.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        _ => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

/// Rank 0: listens at the rendezvous address until every other rank has joined, then
/// answers them all.
fn gather(
    me: &LaunchedRank,
    token: Option<&str>,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<String>, Error> {
    let at = &me.rendezvous;
    let ip = listen_ip(&at.host);
    let listener = TcpListener::bind((ip, at.port)).map_err(|e| {
        lost(format!(
            "rank 0 cannot listen for the rendezvous on {} ({}): {e}",
            SocketAddr::new(ip, at.port),
            at.from
        ))
    })?;
    let own = TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr().map(|a| (l, a.port())))
        .map_err(|e| lost(format!("rank 0 cannot pick a port on {ip}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| lost(format!("rank 0's rendezvous listener: {e}")))?;
    let mut joined: Vec<Option<(TcpStream, String)>> = (0..me.world_size).map(|_| None).collect();
    let own_address = host_port(&at.host, own.1);
    // Connections turned away (strangers, another token), for the message on a timeout.
    let mut turned_away: Vec<String> = Vec::new();
    while joined.iter().skip(1).any(Option::is_none) {
        if Instant::now() >= deadline {
            let missing: Vec<String> = (1..me.world_size)
                .filter(|&r| joined[r].is_none())
                .map(|r| r.to_string())
                .collect();
            let away = if turned_away.is_empty() {
                String::new()
            } else {
                format!("; turned away: {}", turned_away.join(", "))
            };
            return Err(lost(format!(
                "rank 0 waited {} s at {at} ({}) for rank(s) {} of {} ({}) to join the \
                 rendezvous{away}",
                timeout.as_secs(),
                at.from,
                missing.join(", "),
                me.world_size,
                me.launcher.rank_variable()
            )));
        }
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(_) => {
                // Out of descriptors, or a connection reset before it was accepted: the
                // ranks still to come retry their dial.
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(join) = read_join(&stream, JOIN_READ.min(left)) else {
            turned_away.push(format!("{peer} (no rendezvous message)"));
            continue;
        };
        if let Some(expected) = token {
            let presented = join.token.as_deref().unwrap_or("");
            if !same_secret(presented, expected) {
                let why = format!("its cluster token ({CLUSTER_TOKEN}) is not rank 0's");
                answer(&stream, &Answer::Refused(why));
                turned_away.push(format!("{peer} claiming rank {} (token)", join.rank));
                continue;
            }
        }
        if join.world_size != me.world_size {
            let why = format!(
                "rank {} at {peer} has {} = {}, rank 0 has {}",
                join.rank,
                me.launcher.size_variable(),
                join.world_size,
                me.world_size
            );
            answer(&stream, &Answer::Refused(why.clone()));
            return Err(refused(why));
        }
        if join.rank == 0 || join.rank >= me.world_size {
            let why = format!(
                "a process at {peer} joined as {} = {}, where rank 0 expects 1 to {}",
                me.launcher.rank_variable(),
                join.rank,
                me.world_size - 1
            );
            answer(&stream, &Answer::Refused(why.clone()));
            return Err(refused(why));
        }
        // A rank joining again is a restarted process: the newer one counts, the older is
        // told why it was dropped (a second live process with that rank then exits).
        if let Some((earlier, _)) = joined[join.rank].take() {
            let why = format!("rank {} joined again from {peer}", join.rank);
            answer(&earlier, &Answer::Refused(why));
        }
        joined[join.rank] = Some((stream, join.address));
    }
    let addresses: Vec<String> = std::iter::once(own_address)
        .chain(joined.iter().skip(1).flatten().map(|(_, a)| a.clone()))
        .collect();
    for (stream, _) in joined.iter().skip(1).flatten() {
        // A rank gone since it joined is found by the transport, which names it.
        answer(stream, &Answer::Addresses(addresses.clone()));
    }
    drop(own);
    Ok(addresses)
}

/// Rank r > 0: dials rank 0 until it answers or the deadline passes, picks its own port on
/// the interface that reaches rank 0, and waits for the list.
fn join(
    me: &LaunchedRank,
    token: Option<&str>,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<String>, Error> {
    let at = &me.rendezvous;
    let target = at.to_string();
    let rank = me.rank;
    let stream = loop {
        let last_error = match dial(&target, deadline) {
            Ok(stream) => break stream,
            Err(e) => e,
        };
        if Instant::now() + REDIAL >= deadline {
            return Err(lost(format!(
                "rank {rank} cannot reach rank 0's rendezvous at {target} ({}) within {} s: \
                 {last_error}",
                at.from,
                timeout.as_secs()
            )));
        }
        thread::sleep(REDIAL);
    };
    let local_ip = stream
        .local_addr()
        .map_err(|e| lost(format!("rank {rank}: the rendezvous connection: {e}")))?
        .ip();
    let own = TcpListener::bind((local_ip, 0))
        .and_then(|l| l.local_addr().map(|a| (l, a)))
        .map_err(|e| lost(format!("rank {rank} cannot pick a port on {local_ip}: {e}")))?;
    let address = own.1.to_string();
    let message = Join {
        rank,
        world_size: me.world_size,
        address: address.clone(),
        token: token.map(String::from),
    };
    let said = |what: &str| {
        format!(
            "rank {rank}: rank 0's rendezvous at {target} ({}) {what}",
            at.from
        )
    };
    let broke_off = |what: &str| lost(said(what));
    let mut line = serde_json::to_string(&message).expect("a join is JSON");
    line.push('\n');
    let _ = stream.set_write_timeout(Some(DIAL));
    (&stream)
        .write_all(line.as_bytes())
        .map_err(|e| broke_off(&format!("took no message: {e}")))?;
    let left = deadline.saturating_duration_since(Instant::now());
    let _ = stream.set_read_timeout(Some(left.max(Duration::from_millis(1))));
    let mut text = String::new();
    // Rank 0 answers once every rank has joined: up to the deadline.
    let read = BufReader::new(&stream)
        .take(64 + 300 * me.world_size as u64)
        .read_line(&mut text);
    match read {
        Ok(0) => return Err(broke_off("closed the connection without an answer")),
        Ok(_) => {}
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(broke_off(&format!(
                "did not answer within {} s: not every rank joined ({} = {})",
                timeout.as_secs(),
                me.launcher.size_variable(),
                me.world_size
            )))
        }
        Err(e) => return Err(broke_off(&format!("failed: {e}"))),
    }
    match serde_json::from_str::<Answer>(text.trim()) {
        Ok(Answer::Addresses(addresses))
            if addresses.len() == me.world_size && addresses[rank] == address =>
        {
            drop(own);
            Ok(addresses)
        }
        Ok(Answer::Addresses(addresses)) => Err(refused(said(&format!(
            "answered a list of {} that does not hold this rank's address {address} at {rank}",
            addresses.len()
        )))),
        Ok(Answer::Refused(why)) => Err(refused(said(&format!("refused rank {rank}: {why}")))),
        Err(_) => Err(refused(said(
            "answered with something that is not a rendezvous answer",
        ))),
    }
}

/// One dial of every address `target` resolves to, each bounded by [`DIAL`].
fn dial(target: &str, deadline: Instant) -> std::io::Result<TcpStream> {
    let addresses = target.to_socket_addrs()?;
    let mut last = std::io::Error::new(ErrorKind::NotFound, "the name resolves to no address");
    for address in addresses {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&address, DIAL.min(left)) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Reads one join line from `stream` within `limit`; `None` for anything else.
fn read_join(stream: &TcpStream, limit: Duration) -> Option<Join> {
    stream.set_nonblocking(false).ok()?;
    stream
        .set_read_timeout(Some(limit.max(Duration::from_millis(1))))
        .ok()?;
    let mut text = String::new();
    BufReader::new(stream)
        .take(MAX_JOIN)
        .read_line(&mut text)
        .ok()?;
    serde_json::from_str(text.trim()).ok()
}

/// Writes `answer` as one line; a rank that has gone since is not waited for.
fn answer(stream: &TcpStream, answer: &Answer) {
    let mut line = serde_json::to_string(answer).expect("an answer is JSON");
    line.push('\n');
    let _ = stream.set_write_timeout(Some(DIAL));
    let _ = (&*stream).write_all(line.as_bytes());
}

/// Compares two secrets in time independent of where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
