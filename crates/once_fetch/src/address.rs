//! Which IP addresses count as public: the SSRF rules of the fetcher.
//!
//! An address is refused when it is not reachable as a public unicast address on the
//! internet: loopback, private, shared (CGNAT), link-local, unique-local, multicast,
//! unspecified, broadcast, reserved, benchmarking and documentation ranges. IPv6 forms
//! that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by the
//! embedded address; every IPv6 address outside global unicast `2000::/3` is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public, e.g. `loopback`; `None` when it is public.
pub fn non_public_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4).map(str::to_owned),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// `true` when `ip` lies in `net/prefix`.
fn v4_in(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

/// The IPv4 ranges that are not public, most specific first where they overlap.
const V4_BLOCKED: &[([u8; 4], u32, &str)] = &[
    ([0, 0, 0, 0], 32, "unspecified"),
    ([0, 0, 0, 0], 8, "in \"this network\" (0.0.0.0/8)"),
    ([10, 0, 0, 0], 8, "private (10.0.0.0/8)"),
    (
        [100, 64, 0, 0],
        10,
        "in the shared address space (CGNAT, 100.64.0.0/10)",
    ),
    ([127, 0, 0, 0], 8, "loopback"),
    ([169, 254, 0, 0], 16, "link-local (169.254.0.0/16)"),
    ([172, 16, 0, 0], 12, "private (172.16.0.0/12)"),
    (
        [192, 0, 0, 0],
        24,
        "reserved for IETF protocol assignments (192.0.0.0/24)",
    ),
    (
        [192, 0, 2, 0],
        24,
        "reserved for documentation (192.0.2.0/24)",
    ),
    (
        [192, 88, 99, 0],
        24,
        "a 6to4 relay anycast address (192.88.99.0/24)",
    ),
    ([192, 168, 0, 0], 16, "private (192.168.0.0/16)"),
    (
        [198, 18, 0, 0],
        15,
        "reserved for benchmarking (198.18.0.0/15)",
    ),
    (
        [198, 51, 100, 0],
        24,
        "reserved for documentation (198.51.100.0/24)",
    ),
    (
        [203, 0, 113, 0],
        24,
        "reserved for documentation (203.0.113.0/24)",
    ),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "broadcast"),
    ([240, 0, 0, 0], 4, "reserved (240.0.0.0/4)"),
];

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    V4_BLOCKED
        .iter()
        .find(|(net, prefix, _)| v4_in(ip, *net, *prefix))
        .map(|(_, _, reason)| *reason)
}

/// `true` when `ip` lies in `net/prefix`.
fn v6_in(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

/// The IPv6 ranges inside `2000::/3` that are still not public.
const V6_BLOCKED: &[([u16; 8], u32, &str)] = &[
    (
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        32,
        "a Teredo address (2001::/32)",
    ),
    (
        [0x2001, 0x2, 0, 0, 0, 0, 0, 0],
        48,
        "reserved for benchmarking (2001:2::/48)",
    ),
    (
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        "an ORCHID address (2001:10::/28)",
    ),
    (
        [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
        28,
        "an ORCHIDv2 address (2001:20::/28)",
    ),
    (
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "reserved for documentation (2001:db8::/32)",
    ),
    (
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "reserved for documentation (3fff::/20)",
    ),
];

fn v6_reason(ip: Ipv6Addr) -> Option<String> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified".to_owned());
    }
    if ip.is_loopback() {
        return Some("loopback".to_owned());
    }
    // IPv4-mapped `::ffff:a.b.c.d` and the deprecated IPv4-compatible `::a.b.c.d`.
    if segments[..5] == [0; 5] && (segments[5] == 0xffff || segments[5] == 0) {
        let v4 = embedded_v4(segments[6], segments[7]);
        let form = if segments[5] == 0xffff {
            "IPv4-mapped"
        } else {
            "IPv4-compatible"
        };
        return embedded(form, v4);
    }
    // NAT64 `64:ff9b::/96` carries an IPv4 address in its last 32 bits.
    if v6_in(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        let v4 = embedded_v4(segments[6], segments[7]);
        return embedded("NAT64", v4);
    }
    if v6_in(ip, [0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48) {
        return Some("local-use NAT64 (64:ff9b:1::/48)".to_owned());
    }
    if v6_in(ip, [0xff00, 0, 0, 0, 0, 0, 0, 0], 8) {
        return Some("multicast".to_owned());
    }
    if v6_in(ip, [0xfc00, 0, 0, 0, 0, 0, 0, 0], 7) {
        return Some("unique-local (fc00::/7)".to_owned());
    }
    if v6_in(ip, [0xfe80, 0, 0, 0, 0, 0, 0, 0], 10) {
        return Some("link-local (fe80::/10)".to_owned());
    }
    if v6_in(ip, [0xfec0, 0, 0, 0, 0, 0, 0, 0], 10) {
        return Some("site-local (fec0::/10)".to_owned());
    }
    // 6to4 `2002:a.b.c.d::/48` tunnels to the embedded IPv4 address.
    if v6_in(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let v4 = embedded_v4(segments[1], segments[2]);
        return embedded("6to4", v4);
    }
    if !v6_in(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return Some("outside global unicast (2000::/3)".to_owned());
    }
    V6_BLOCKED
        .iter()
        .find(|(net, prefix, _)| v6_in(ip, *net, *prefix))
        .map(|(_, _, reason)| (*reason).to_owned())
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(high) << 16) | u32::from(low))
}

/// The reason for an IPv6 address that embeds a non-public IPv4 address.
fn embedded(form: &str, v4: Ipv4Addr) -> Option<String> {
    v4_reason(v4).map(|reason| format!("the {form} form of {v4}, which is {reason}"))
}

/// `true` for loopback addresses, including the IPv4-mapped and -compatible forms of
/// `127.0.0.0/8`: the only addresses a test policy may additionally allow.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(text: &str) -> Option<String> {
        non_public_reason(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }

    #[test]
    fn non_public_addresses_are_refused() {
        for (ip, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.0.0.1", "private (10.0.0.0/8)"),
            ("172.16.0.1", "private (172.16.0.0/12)"),
            ("172.31.255.255", "private (172.16.0.0/12)"),
            ("192.168.1.1", "private (192.168.0.0/16)"),
            ("169.254.169.254", "link-local (169.254.0.0/16)"),
            (
                "100.64.0.1",
                "in the shared address space (CGNAT, 100.64.0.0/10)",
            ),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "in \"this network\" (0.0.0.0/8)"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved (240.0.0.0/4)"),
            ("192.0.2.1", "reserved for documentation (192.0.2.0/24)"),
            (
                "198.51.100.7",
                "reserved for documentation (198.51.100.0/24)",
            ),
            ("203.0.113.9", "reserved for documentation (203.0.113.0/24)"),
            ("198.18.0.1", "reserved for benchmarking (198.18.0.0/15)"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fe80::1", "link-local (fe80::/10)"),
            ("fc00::1", "unique-local (fc00::/7)"),
            ("fd12:3456::1", "unique-local (fc00::/7)"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "reserved for documentation (2001:db8::/32)"),
            (
                "::ffff:127.0.0.1",
                "the IPv4-mapped form of 127.0.0.1, which is loopback",
            ),
            (
                "::ffff:10.1.2.3",
                "the IPv4-mapped form of 10.1.2.3, which is private (10.0.0.0/8)",
            ),
            (
                "::ffff:169.254.169.254",
                "the IPv4-mapped form of 169.254.169.254, which is link-local (169.254.0.0/16)",
            ),
            (
                "::127.0.0.1",
                "the IPv4-compatible form of 127.0.0.1, which is loopback",
            ),
            (
                "64:ff9b::7f00:1",
                "the NAT64 form of 127.0.0.1, which is loopback",
            ),
            (
                "2002:a00:1::",
                "the 6to4 form of 10.0.0.1, which is private (10.0.0.0/8)",
            ),
            ("2001::1", "a Teredo address (2001::/32)"),
            ("fec0::1", "site-local (fec0::/10)"),
            ("100::1", "outside global unicast (2000::/3)"),
        ] {
            assert_eq!(reason(ip).as_deref(), Some(expected), "{ip}");
        }
    }

    #[test]
    fn loopback_covers_mapped_forms() {
        assert!(is_loopback("127.0.0.1".parse().unwrap()));
        assert!(is_loopback("::1".parse().unwrap()));
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("10.0.0.1".parse().unwrap()));
    }
}
