//! What one client address may hold open in a host at once: connections,
//! and request bodies the host is waiting for ([`Peers`]).
//!
//! A host-wide cap alone lets one address take all of it: 24 connections
//! declaring large bodies and sending nothing, or a thousand connections
//! trickling their headers, and every other caller is turned away. So each
//! address has its own caps, below the host's: past
//! [`Caps::connections`] a new connection is answered 429
//! `too_many_connections_from_address` and closed; past [`Caps::bodies`] a
//! request whose body has to be waited for is answered 429
//! `too_many_bodies_from_address` before a byte of it is read. (A body that
//! came with its head is never waited for, and takes no slot.)
//!
//! # Addresses
//!
//! An address is what one client is usually given ([`Address::of`]): an
//! IPv4 address as it is (so `127.0.0.1` and `127.0.0.2` are two), an
//! IPv6 address by its /64 (a client holds a whole /64, so counting each of
//! its 2^64 addresses apart would give it no cap at all), and an
//! IPv4-mapped IPv6 address as the IPv4 address it maps (`::ffff:10.0.0.1`
//! is `10.0.0.1`). `::1` and `127.0.0.1` are two addresses.
//!
//! # The table is bounded
//!
//! An address has an entry only while it holds a connection or a body
//! slot, and a body slot is only taken on an open connection: the entry is
//! removed when the last is given back. So the table never holds more
//! entries than the host has connections open, which the host caps
//! (`max_connections`), whatever the number of addresses that ever came.
//! Each count only moves under the table's lock, and is given back exactly
//! once, by the drop of what took it ([`Connection`], [`BodySlot`]).

use crate::refusal::{Code, Refusal};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// One client address, as its caps count it: IPv4 as it is, IPv6 by its /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Address {
    /// An IPv4 address (IPv4-mapped IPv6 included).
    V4([u8; 4]),
    /// The first 64 bits of an IPv6 address.
    V6([u16; 4]),
}

impl Address {
    /// The address `ip` counts as.
    pub fn of(ip: IpAddr) -> Address {
        match ip {
            IpAddr::V4(v4) => Address::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Address::V4(v4.octets()),
                None => {
                    let s = v6.segments();
                    Address::V6([s[0], s[1], s[2], s[3]])
                }
            },
        }
    }
}

impl std::fmt::Display for Address {
    /// `203.0.113.7`, or `2001:db8:1:2::/64` (the form [`crate::budget::address_id`] gives).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::V4(o) => write!(f, "{}", std::net::Ipv4Addr::from(*o)),
            Address::V6(s) => write!(f, "{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3]),
        }
    }
}

/// The caps of one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Connections open at once (`--max-connections-per-address`).
    pub connections: usize,
    /// Bodies the host waits for at once (`--max-bodies-per-address`).
    pub bodies: usize,
}

/// What one address holds now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Connections open.
    pub connections: usize,
    /// Bodies being waited for.
    pub bodies: usize,
}

/// The table of what each address holds (see the module docs), shared by
/// every connection of a host.
#[derive(Debug, Clone)]
pub struct Peers {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    caps: Caps,
    table: Mutex<HashMap<Address, Held>>,
}

impl Peers {
    /// An empty table with these caps.
    pub fn new(caps: Caps) -> Self {
        Peers { inner: Arc::new(Inner { caps, table: Mutex::new(HashMap::new()) }) }
    }

    /// The caps.
    pub fn caps(&self) -> Caps {
        self.inner.caps
    }

    fn table(&self) -> MutexGuard<'_, HashMap<Address, Held>> {
        // A count is a plain number: a panic elsewhere cannot leave it half-moved.
        self.inner.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection from `ip`, or the refusal when its address has as
    /// many open as it may.
    pub fn connect(&self, ip: IpAddr) -> Result<Connection, Refusal> {
        let address = Address::of(ip);
        let cap = self.inner.caps.connections;
        let mut table = self.table();
        let held = table.entry(address).or_default();
        if held.connections >= cap {
            let refusal = Refusal::new(
                Code::TooManyConnectionsFromAddress,
                format!(
                    "this address has {cap} connections open, as many as max_connections_per_address allows; reuse one (keep-alive) or close one, then retry"
                ),
            )
            .retry_after(1);
            forget_if_empty(&mut table, address);
            return Err(refusal);
        }
        held.connections += 1;
        Ok(Connection { peers: self.clone(), address })
    }

    /// What `ip`'s address holds now.
    pub fn held(&self, ip: IpAddr) -> Held {
        self.table().get(&Address::of(ip)).copied().unwrap_or_default()
    }

    /// Addresses in the table now (never more than connections open).
    pub fn addresses(&self) -> usize {
        self.table().len()
    }

    fn give_back(&self, address: Address, connections: usize, bodies: usize) {
        let mut table = self.table();
        if let Some(held) = table.get_mut(&address) {
            held.connections = held.connections.saturating_sub(connections);
            held.bodies = held.bodies.saturating_sub(bodies);
        }
        forget_if_empty(&mut table, address);
    }
}

fn forget_if_empty(table: &mut HashMap<Address, Held>, address: Address) {
    if table.get(&address).is_some_and(|h| *h == Held::default()) {
        table.remove(&address);
    }
}

/// One open connection of an address, given back on drop.
#[derive(Debug)]
pub struct Connection {
    peers: Peers,
    address: Address,
}

impl Connection {
    /// The address it counts against.
    pub fn address(&self) -> Address {
        self.address
    }

    /// A slot for a body the host has to wait for, or the refusal when the
    /// address already has as many as it may.
    pub fn body(&self) -> Result<BodySlot, Refusal> {
        let cap = self.peers.inner.caps.bodies;
        let mut table = self.peers.table();
        let held = table.entry(self.address).or_default();
        if held.bodies >= cap {
            return Err(Refusal::new(
                Code::TooManyBodiesFromAddress,
                format!("this address is already sending {cap} request bodies, as many as max_bodies_per_address allows; send each body with its request, or wait for one to finish"),
            )
            .retry_after(1));
        }
        held.bodies += 1;
        Ok(BodySlot { peers: self.peers.clone(), address: self.address })
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.peers.give_back(self.address, 1, 0);
    }
}

/// A body being waited for, given back on drop.
#[derive(Debug)]
pub struct BodySlot {
    peers: Peers,
    address: Address,
}

impl Drop for BodySlot {
    fn drop(&mut self) {
        self.peers.give_back(self.address, 0, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_addresses_are_apart_and_ipv6_counts_by_its_64() {
        assert_ne!(Address::of(ip("127.0.0.1")), Address::of(ip("127.0.0.2")));
        assert_ne!(Address::of(ip("::1")), Address::of(ip("127.0.0.1")));
        assert_eq!(Address::of(ip("::ffff:10.0.0.1")), Address::of(ip("10.0.0.1")));
        assert_eq!(Address::of(ip("2001:db8:1:2::1")), Address::of(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")));
        assert_ne!(Address::of(ip("2001:db8:1:2::1")), Address::of(ip("2001:db8:1:3::1")));
        assert_eq!(Address::of(ip("2001:db8:1:2::1")).to_string(), "2001:db8:1:2::/64");
        assert_eq!(Address::of(ip("203.0.113.7")).to_string(), "203.0.113.7");
    }
}
