//! Which local address a rank listens on, given the address its peers reach it at.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::distribute::error::AddressError;

/// Where a rank whose peers reach it at `address` ("host:port") listens: the address itself
/// for a loopback IP, otherwise every interface, on its port.
pub(crate) fn listen_address(address: &str) -> Result<SocketAddr, AddressError> {
    let authority = address
        .split_once("://")
        .map_or(address, |(_, rest)| rest)
        .trim_end_matches('/');
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| AddressError::NotHostPort {
            address: address.to_string(),
        })?;
    let port: u16 = port.parse().map_err(|_| AddressError::Port {
        address: address.to_string(),
    })?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok(match host.parse::<IpAddr>() {
        Ok(ip) if ip.is_loopback() => SocketAddr::new(ip, port),
        Ok(IpAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port),
        _ => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
    })
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
}
