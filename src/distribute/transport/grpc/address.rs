//! Which local address a rank listens on, given the address its peers reach it at, and
//! whether that address is on this machine.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::distribute::collective_fault::{AddressFault, CollectiveFault};

/// Where a rank whose peers reach it at `address` ("host:port") listens: the address itself
/// for a loopback IP, otherwise every interface, on its port.
pub(crate) fn listen_address(address: &str) -> Result<SocketAddr, AddressFault> {
    let (host, port) = host_and_port(address)?;
    Ok(match host.parse::<IpAddr>() {
        Ok(ip) if ip.is_loopback() => SocketAddr::new(ip, port),
        Ok(IpAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port),
        _ => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
    })
}

/// Whether the rank at `address` ("host:port") is on this machine, in this network
/// namespace: a loopback IP (127.0.0.0/8, ::1) or `localhost`. Only the literal address
/// counts: a name that merely resolves to this machine may as well be a service in front of
/// another one.
pub(super) fn is_same_host(address: &str) -> bool {
    host_and_port(address).is_ok_and(|(host, _)| {
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    })
}

/// Why rank `rank` cannot listen on `listen`, naming the task given the same port on this
/// machine when there is one: two tasks of one cluster sharing a socket is a configuration
/// error that no restart cures.
pub(super) fn bind_failure(
    rank: usize,
    listen: SocketAddr,
    addresses: &[String],
    names: &[String],
    error: &std::io::Error,
) -> CollectiveFault {
    let name = |r: usize| names.get(r).cloned().unwrap_or_else(|| format!("rank {r}"));
    let me = name(rank);
    let sharing = (error.kind() == std::io::ErrorKind::AddrInUse)
        .then(|| {
            addresses.iter().enumerate().find(|&(other, address)| {
                other != rank
                    && host_and_port(address).is_ok_and(|(_, port)| port == listen.port())
                    && (is_same_host(address) || same_host_name(address, &addresses[rank]))
            })
        })
        .flatten();
    match sharing {
        Some((other, address)) => CollectiveFault::invalid(format!(
            "{me} cannot listen on {listen}: {error}; {} ('{address}') is given the same port \
             on this machine: every task needs a port of its own",
            name(other)
        )),
        None => CollectiveFault::invalid(format!("{me} cannot listen on {listen}: {error}")),
    }
}

/// Whether `a` and `b` name one host, compared case-insensitively.
fn same_host_name(a: &str, b: &str) -> bool {
    match (host_and_port(a), host_and_port(b)) {
        (Ok((a, _)), Ok((b, _))) => a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// The host (without IPv6 brackets) and port of `address`, with or without a scheme.
pub(super) fn host_and_port(address: &str) -> Result<(&str, u16), AddressFault> {
    let authority = address
        .split_once("://")
        .map_or(address, |(_, rest)| rest)
        .trim_end_matches('/');
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| AddressFault::NotHostPort {
            address: address.to_string(),
        })?;
    let port: u16 = port.parse().map_err(|_| AddressFault::Port {
        address: address.to_string(),
    })?;
    Ok((host.trim_start_matches('[').trim_end_matches(']'), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_bind_loopback_or_every_interface() {
        let at = |a: &str| listen_address(a).unwrap().to_string();
        assert_eq!(at("127.0.0.1:5000"), "127.0.0.1:5000");
        assert_eq!(at("[::1]:5000"), "[::1]:5000");
        assert_eq!(at("worker-1.job.svc:2222"), "0.0.0.0:2222");
        assert_eq!(at("10.0.0.7:2222"), "0.0.0.0:2222");
        assert_eq!(at("[fd00::7]:2222"), "[::]:2222");
        assert_eq!(at("http://worker-0:2222"), "0.0.0.0:2222");
        assert!(listen_address("worker-0").is_err());
        assert!(listen_address("worker-0:http").is_err());
    }

    #[test]
    fn a_port_in_use_names_the_task_given_it_too() {
        let addresses = ["127.0.0.1:5000".to_string(), "localhost:05000".to_string()];
        let names = ["chief:0".to_string(), "worker:0".to_string()];
        let listen = listen_address(&addresses[1]).unwrap();
        let in_use = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let message = bind_failure(1, listen, &addresses, &names, &in_use).to_string();
        assert!(
            message.contains("worker:0 cannot listen on 0.0.0.0:5000")
                && message.contains("chief:0 ('127.0.0.1:5000') is given the same port"),
            "{message}"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let message = bind_failure(1, listen, &addresses, &names, &denied).to_string();
        assert!(!message.contains("chief:0"), "{message}");
        let elsewhere = ["10.0.0.1:5000".to_string(), "10.0.0.2:5000".to_string()];
        let message = bind_failure(1, listen, &elsewhere, &names, &in_use).to_string();
        assert!(!message.contains("chief:0"), "{message}");
    }

    #[test]
    fn only_loopback_literals_and_localhost_are_on_this_host() {
        for local in [
            "127.0.0.1:5000",
            "127.3.2.1:5000",
            "[::1]:5000",
            "localhost:5000",
            "LocalHost:5000",
            "http://127.0.0.1:5000/",
        ] {
            assert!(is_same_host(local), "{local}");
        }
        for remote in [
            "10.0.0.7:2222",
            "[fd00::7]:2222",
            "worker-1.job.svc:2222",
            "localhost.example.com:2222",
            "127.0.0.1",
            "0.0.0.0:2222",
        ] {
            assert!(!is_same_host(remote), "{remote}");
        }
    }
}
