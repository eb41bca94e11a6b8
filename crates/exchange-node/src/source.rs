//! Where a client comes from, as the limits that count per client see it.

use std::net::{IpAddr, Ipv6Addr};

/// A peer address as allow-lists see it (an IPv4 client reaching an IPv6
/// socket shows as `::ffff:a.b.c.d`).
pub fn peer_address(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
        v4 => v4,
    }
}

/// The source a client counts against in per-source limits (HTTP
/// connections, failed authentications, FIX connections before logon):
/// its IPv4 address, also when it arrives mapped into IPv6, or its IPv6
/// /64, since one subscriber commonly gets a whole /64 and could otherwise
/// take a limit's worth from each of its addresses.
pub fn source_of(peer: IpAddr) -> IpAddr {
    match peer_address(peer) {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn sources_are_ipv4_addresses_and_ipv6_64s() {
        assert_eq!(source_of(ip("192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(source_of(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(source_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_ne!(
            source_of(ip("2001:db8:1:2::1")),
            source_of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(peer_address(ip("2001:db8::1")), ip("2001:db8::1"));
    }
}
