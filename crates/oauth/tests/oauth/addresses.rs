//! Which addresses and names are public: the one rule the server applies
//! before fetching a metadata document and the embedded host applies after
//! resolving a name. One test per range.
use cairn_oauth::wire::{public_host, public_ip};
use std::net::IpAddr;

fn public(a: &str) -> bool {
    public_ip(a.parse::<IpAddr>().unwrap_or_else(|e| panic!("{a}: {e}")))
}

fn none_public(addresses: &[&str]) {
    for a in addresses {
        assert!(!public(a), "{a} was taken as public");
    }
}

#[test]
fn public_addresses_are_public() {
    for a in ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "2a00:1450:4001::200e"] {
        assert!(public(a), "{a} was refused");
    }
}

#[test]
fn private_loopback_and_reserved_ipv4_ranges_are_not_public() {
    none_public(&[
        "127.0.0.1",
        "127.255.0.9",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "0.1.2.3",
        "255.255.255.255",
        "100.64.0.1",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",
        "198.18.0.1",
        "198.51.100.1",
        "203.0.113.1",
        "224.0.0.1",
        "240.0.0.1",
    ]);
}

#[test]
fn ipv6_loopback_unique_local_link_local_and_multicast_are_not_public() {
    none_public(&["::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1"]);
}

#[test]
fn site_local_fec0_is_not_public() {
    none_public(&["fec0::1", "fec0:0:0:1::1", "feff::1"]);
}

#[test]
fn nat64_addresses_are_judged_as_the_ipv4_they_carry() {
    none_public(&["64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::c0a8:101", "64:ff9b::a9fe:a9fe"]);
    assert!(public("64:ff9b::808:808"), "NAT64 of 8.8.8.8 is as public as 8.8.8.8");
    none_public(&["64:ff9b:1::1", "64:ff9b:1::808:808"]);
}

#[test]
fn sixto4_addresses_are_judged_as_the_ipv4_they_carry() {
    none_public(&["2002:7f00:1::", "2002:7f00:1::1", "2002:a00:1::1", "2002:c0a8:101::1", "2002:a9fe:a9fe::1"]);
    assert!(public("2002:808:808::1"), "6to4 of 8.8.8.8 is as public as 8.8.8.8");
}

#[test]
fn ipv4_compatible_and_mapped_addresses_are_judged_as_the_ipv4_they_carry() {
    none_public(&["::127.0.0.1", "::10.0.0.1", "::169.254.169.254", "::ffff:127.0.0.1", "::ffff:192.168.0.1"]);
    assert!(public("::8.8.8.8") && public("::ffff:8.8.8.8"));
}

#[test]
fn documentation_discard_and_protocol_assignment_ipv6_ranges_are_not_public() {
    none_public(&["2001:db8::1", "3fff::1", "100::1", "2001::1", "2001:2::1"]);
}

#[test]
fn public_names_pass_and_private_or_disguised_ones_are_refused_naming_why() {
    for ok in ["app.example.com", "client.claude.ai", "xn--bcher-kva.de", "8.8.8.8"] {
        assert_eq!(public_host(ok), Ok(()), "{ok}");
    }
    for (host, why) in [
        ("rest.spin.internal", "private name"),
        ("localhost", "public DNS name"),
        ("app.localhost", "private name"),
        ("printer.local", "private name"),
        ("nas.home.arpa", "private name"),
        ("router", "public DNS name"),
        ("app.example.com.", "ending in a dot"),
        ("127.1", "public DNS name"),
        ("2130706433", "public DNS name"),
        ("0x7f.0.0.1", "public DNS name"),
        ("bad_name.example.com", "public DNS name"),
        ("127.0.0.1", "not a public address"),
        ("::1", "not a public address"),
        ("", "not a DNS name"),
    ] {
        let e = public_host(host).expect_err(host);
        assert!(e.contains(why), "{host}: {e}");
    }
}
