//! Whether two TF_CONFIG addresses name one listening socket, however they are spelt.
//!
//! Two tasks given one socket would both try to listen on it: the second fails at start-up,
//! and a failure to start looks like a lost peer to a restart policy. Spelling alone does not
//! tell: `127.0.0.1:2222`, `127.0.0.1:02222` and `localhost:2222` are one socket, and a task
//! at `localhost` listens on every interface, so it also takes the port of every loopback
//! address. The check is pure (no name is resolved): only names that mean this machine by
//! definition count as this machine.

use std::net::IpAddr;

/// The host of an address, as far as telling sockets apart goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// A loopback IP (127.0.0.0/8, ::1): a socket of its own on this machine.
    Loopback(IpAddr),
    /// `localhost` (and RFC 6761's `*.localhost`), or the unspecified address (0.0.0.0, ::):
    /// this machine, every interface (a task at `localhost` listens on all of them).
    ThisMachine,
    /// Any other IP.
    Ip(IpAddr),
    /// Any other name, lower-cased, without a trailing dot.
    Name(String),
}

/// A parsed "host:port".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Socket {
    host: Host,
    /// The port as a number: `02222` is `2222`.
    pub(super) port: u16,
}

impl Socket {
    /// `address` ("host:port", the host in brackets for IPv6), or `None` when it is not one.
    pub(super) fn parse(address: &str) -> Option<Self> {
        let (host, port) = address.rsplit_once(':')?;
        if host.is_empty() || port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let port = port.parse().ok()?;
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => {
                let ip = ip.to_canonical();
                if ip.is_unspecified() {
                    Host::ThisMachine
                } else if ip.is_loopback() {
                    Host::Loopback(ip)
                } else {
                    Host::Ip(ip)
                }
            }
            Err(_) => {
                let name = bare.strip_suffix('.').unwrap_or(bare).to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    Host::ThisMachine
                } else {
                    Host::Name(name)
                }
            }
        };
        Some(Self { host, port })
    }

    /// Whether a task at `self` and one at `other` would listen on (or be reached at) the
    /// same socket.
    pub(super) fn clashes_with(&self, other: &Socket) -> bool {
        if self.port != other.port {
            return false;
        }
        match (&self.host, &other.host) {
            (Host::ThisMachine, Host::ThisMachine | Host::Loopback(_))
            | (Host::Loopback(_), Host::ThisMachine) => true,
            (Host::Loopback(a), Host::Loopback(b)) | (Host::Ip(a), Host::Ip(b)) => a == b,
            (Host::Name(a), Host::Name(b)) => a == b,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clash(a: &str, b: &str) -> bool {
        let (a, b) = (Socket::parse(a).unwrap(), Socket::parse(b).unwrap());
        assert_eq!(a.clashes_with(&b), b.clashes_with(&a), "symmetric");
        a.clashes_with(&b)
    }

    #[test]
    fn spellings_of_one_socket_clash() {
        for (a, b) in [
            ("127.0.0.1:2222", "127.0.0.1:2222"),
            ("127.0.0.1:2222", "127.0.0.1:02222"),
            ("127.0.0.1:2222", "localhost:2222"),
            ("127.0.0.2:2222", "localhost:2222"),
            ("[::1]:2222", "localhost:2222"),
            ("[::1]:2222", "[0:0:0:0:0:0:0:1]:2222"),
            ("[::ffff:127.0.0.1]:2222", "127.0.0.1:2222"),
            ("LOCALHOST:2222", "localhost.:2222"),
            ("worker.localhost:2222", "127.0.0.1:2222"),
            ("0.0.0.0:2222", "127.0.0.1:2222"),
            ("Host-A.svc:2222", "host-a.svc.:002222"),
            ("10.0.0.7:2222", "10.0.0.7:2222"),
        ] {
            assert!(clash(a, b), "{a} {b}");
        }
    }

    #[test]
    fn distinct_sockets_do_not() {
        for (a, b) in [
            ("127.0.0.1:2222", "127.0.0.1:2223"),
            // Two loopback IPs are two sockets: both can be bound on one port.
            ("127.0.0.1:2222", "127.0.0.2:2222"),
            ("127.0.0.1:2222", "[::1]:2222"),
            // Names are not resolved: in Kubernetes every pod listens on the same port.
            ("worker-0.svc:2222", "worker-1.svc:2222"),
            ("worker-0.svc:2222", "10.0.0.7:2222"),
            ("localhost:2222", "10.0.0.7:2222"),
            ("localhost.example.com:2222", "127.0.0.1:2222"),
        ] {
            assert!(!clash(a, b), "{a} {b}");
        }
    }

    #[test]
    fn only_host_and_decimal_port_parse() {
        for bad in ["a", "a:", ":1", "a:+1", "a:-1", "a:1x", "a:99999", "a: 1"] {
            assert_eq!(Socket::parse(bad), None, "{bad}");
        }
        assert_eq!(Socket::parse("a:00080").unwrap().port, 80);
    }
}
