//! The front door's guarantees, natively, over the in-memory store.

use cairn_door::{Arrival, Code, Door, Settings, budget, summary};
use cairn_kv::Store;
use cairn_kv::memory::MemoryStore;

fn arrival<'a>(client: &'a str, headers: &[(&'a str, &'a [u8])]) -> Arrival<'a> {
    let mut h = vec![("spin-client-addr", client.as_bytes()), ("spin-full-url", &b"http://127.0.0.1:3000/mcp"[..])];
    h.extend_from_slice(headers);
    Arrival { path_and_query: "/mcp", headers: h }
}

fn settings() -> Settings {
    let get = |n: &str| match n {
        "audience" => Some("http://127.0.0.1:3000/mcp".into()),
        "rate_limit_per_minute" => Some("60".into()),
        "refused_per_minute" => Some("3".into()),
        _ => None,
    };
    Settings::of(&cairn_config::Config::read(&get, &[]).unwrap().door)
}

fn keys(store: &MemoryStore) -> Vec<String> {
    store.list_keys("cache", None, 100_000).unwrap()
}

mod order {
    use super::*;

    #[test]
    fn limits_come_before_origin_and_name_what_was_wrong() {
        let s = settings();
        let door = Door::new(&s, None, 0);
        let big = vec![b'a'; 9000];
        let r = door.screen(&arrival("10.0.0.1:1", &[("origin", &big)])).unwrap_err();
        assert_eq!(r.code, Code::HeaderTooLarge, "an oversized origin is a size refusal, not an origin one");
        let r = door.screen(&arrival("10.0.0.1:1", &[("origin", b"https://evil.example")])).unwrap_err();
        assert_eq!(r.code, Code::ForbiddenOrigin);
        let r = door.screen(&arrival("10.0.0.1:1", &[("content-length", b"99999999")])).unwrap_err();
        assert_eq!((r.code, r.status()), (Code::BodyTooLarge, 413));
        assert!(door.screen(&arrival("10.0.0.1:1", &[("content-length", b"10")])).is_ok());
    }

    #[test]
    fn a_bad_variable_is_refused_naming_it() {
        let read = |name: &'static str, value: &'static str| cairn_config::Config::read(&move |n| (n == name).then(|| value.to_string()), &[]);
        assert_eq!(read("rate_limit_per_minute", "lots").unwrap_err().variable, "rate_limit_per_minute");
        assert_eq!(read("max_body_bytes", "0").unwrap_err().variable, "max_body_bytes");
    }

    #[test]
    fn the_doors_defaults_are_the_tables() {
        assert_eq!(Settings::of(&cairn_config::Config::defaults().door), Settings::default());
    }
}

mod refusals_cost_nothing_durable {
    use super::*;

    #[test]
    fn ten_thousand_refusals_of_one_address_leave_a_few_counters() {
        let s = settings();
        let store = MemoryStore::new();
        for i in 0..10_000u64 {
            let door = Door::new(&s, Some(&store), (1_000_000 + i / 100) * 1000);
            let a = arrival("198.51.100.9:4444", &[]);
            door.refused(&a, cairn_door::Refusal::new(Code::Unauthorized, "no token"));
        }
        let k = keys(&store);
        // 10,000 requests over 100 seconds (three minutes on the clock): per
        // minute one address counter, one reason counter, one count of addresses.
        assert!(k.len() <= 9, "{k:?}");
        assert!(k.iter().all(|k| k.starts_with("door/")), "{k:?}");
        assert!(k.iter().all(|k| k.len() < 64), "no key keeps anything the client sent at length");
    }

    #[test]
    fn a_spread_out_flood_shares_one_counter_past_the_cap() {
        let s = Settings { addresses_per_minute: 10, ..settings() };
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 600_000);
        for i in 0..1000u32 {
            let addr = format!("10.{}.{}.{}:80", i >> 16, (i >> 8) & 255, i & 255);
            door.refused(&arrival(&addr, &[]), cairn_door::Refusal::new(Code::Unauthorized, "x"));
        }
        let k = keys(&store);
        assert!(k.len() <= 10 + 3, "{} keys: {k:?}", k.len());
        let sum = summary::read(&store, 600, 1, 100, 10_000).unwrap();
        assert_eq!(sum.by_code["unauthorized"], 1000);
        let total: i64 = sum.top_addresses.iter().map(|(_, n)| n).sum();
        assert_eq!(total, 1000, "every refusal is counted under some address");
        assert_eq!(sum.top_addresses[0].0, "other");
    }

    #[test]
    fn authenticated_refusals_are_not_counted_as_anonymous() {
        let s = settings();
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 60);
        door.refused(&arrival("10.0.0.1:1", &[]), cairn_door::Refusal::new(Code::InsufficientScope, "x"));
        assert!(keys(&store).is_empty());
    }
}

mod budgets {
    use super::*;

    #[test]
    fn an_address_past_its_refusals_is_throttled_until_the_minute_ends() {
        let s = settings();
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 120_000);
        let a = arrival("203.0.113.5:9", &[]);
        for _ in 0..3 {
            assert!(!door.screen(&a).unwrap().throttled);
            door.refused(&a, cairn_door::Refusal::new(Code::Unauthorized, "bad token"));
        }
        assert!(door.screen(&a).unwrap().throttled);
        assert!(!door.screen(&arrival("203.0.113.6:9", &[])).unwrap().throttled, "another address is not");
        let r = door.throttled();
        assert_eq!((r.status(), r.retry_after), (429, Some(60)));
        assert!(!Door::new(&s, Some(&store), 180_000).screen(&a).unwrap().throttled, "a new minute, a new budget");
    }

    #[test]
    fn one_subject_gets_one_budget_however_many_tokens() {
        // 60 a minute: one unit a second, ten at once.
        let s = settings();
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 60_000);
        for _ in 0..10 {
            door.charge("acme", "bot", 1).unwrap();
        }
        let over = door.charge("acme", "bot", 1).unwrap_err();
        assert_eq!((over.refusal.code, over.first, over.refusal.retry_after), (Code::RateLimited, true, Some(1)));
        assert!(!door.charge("acme", "bot", 1).unwrap_err().first, "only the first refusal of a minute is worth a record");
        door.charge("acme", "ada", 10).unwrap();
        door.charge("other", "bot", 10).unwrap();
        // It refills evenly: a second later, one more unit.
        let later = Door::new(&s, Some(&store), 61_000);
        later.charge("acme", "bot", 1).unwrap();
        assert!(later.charge("acme", "bot", 1).is_err());
    }

    #[test]
    fn a_batch_counts_every_message_and_a_refusal_spends_nothing() {
        let s = settings();
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 60_000);
        door.charge("acme", "bot", 8).unwrap();
        assert!(door.charge("acme", "bot", 3).is_err(), "eleven is past the burst");
        door.charge("acme", "bot", 2).unwrap();
    }

    #[test]
    fn work_a_call_took_is_debt_that_delays_the_next_calls() {
        let s = settings();
        let store = MemoryStore::new();
        let door = Door::new(&s, Some(&store), 60_000);
        door.charge("acme", "bot", 1).unwrap();
        // The call ran 300 ms: 30 more units, paid off at one a second.
        door.charge_work("acme", "bot", std::time::Duration::from_millis(300));
        let r = door.charge("acme", "bot", 1).unwrap_err().refusal;
        assert_eq!(r.retry_after, Some(22), "31 units spent, 10 allowed at once: 22 s until one more fits");
        assert!(Door::new(&s, Some(&store), 82_000).charge("acme", "bot", 1).is_ok());
        // A short call costs nothing more.
        let other = Door::new(&s, Some(&store), 60_000);
        other.charge_work("acme", "ada", std::time::Duration::from_millis(9));
        for _ in 0..10 {
            other.charge("acme", "ada", 1).unwrap();
        }
    }

    #[test]
    fn scopes_are_required_with_a_challenge_naming_them() {
        let s = settings();
        let door = Door::new(&s, None, 0);
        assert!(door.require(&["notes:read".into()], "notes:read", "Bearer x").is_ok());
        let r = door.require(&["notes:read".into()], "notes:write", "Bearer resource_metadata=\"m\"").unwrap_err();
        assert_eq!(r.status(), 403);
        assert!(r.challenge.unwrap().contains("scope=\"notes:write\""));
    }
}

mod sweeping {
    use super::*;

    #[test]
    fn the_sweep_keeps_the_window_and_drops_the_rest() {
        let s = Settings { window_minutes: 5, ..settings() };
        let store = MemoryStore::new();
        for minute in 0..20u64 {
            let door = Door::new(&s, Some(&store), minute * 60_000);
            door.refused(&arrival("10.0.0.1:1", &[]), cairn_door::Refusal::new(Code::Unauthorized, "x"));
            let _ = door.charge("acme", "bot", 1);
            let _ = door.charge("acme", &format!("once-{minute}"), 1);
        }
        let door = Door::new(&s, Some(&store), 19 * 60_000);
        let dropped = door.sweep(10_000).unwrap();
        assert!(dropped > 0);
        let paces: Vec<String> = keys(&store).into_iter().filter(|k| k.starts_with("door/g/")).collect();
        assert_eq!(paces.len(), 2, "only the rate states not yet paid off stay: {paces:?}");
        for k in keys(&store).into_iter().filter(|k| !k.starts_with("door/g/")) {
            let minute: u64 = k.split('/').nth(2).unwrap().parse().unwrap();
            let keep = if k.starts_with("door/s/") { 2 } else { 5 };
            assert!(minute >= 19 - keep, "{k} survived the sweep");
        }
        assert!(keys(&store).iter().any(|k| k.starts_with("door/a/")), "the window is kept");
        assert_eq!(budget::sweep(&store, 19 * 60, 5, 10_000).unwrap(), 0, "a second sweep finds nothing");
    }
}

mod peers {
    use cairn_door::Code;
    use cairn_door::peers::{Caps, Peers};
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn peers() -> Peers {
        Peers::new(Caps { connections: 3, bodies: 2 })
    }

    #[test]
    fn an_address_past_its_connection_cap_is_refused_and_other_addresses_are_not() {
        let p = peers();
        let held: Vec<_> = (0..3).map(|_| p.connect(ip("127.0.0.2")).unwrap()).collect();
        let r = p.connect(ip("127.0.0.2")).unwrap_err();
        assert_eq!((r.code, r.status()), (Code::TooManyConnectionsFromAddress, 429));
        assert!(r.message.contains("max_connections_per_address") && r.message.contains('3'), "{}", r.message);
        assert!(r.retry_after.is_some());
        // Another loopback address, and the IPv6 loopback, are other addresses.
        let _other = p.connect(ip("127.0.0.1")).unwrap();
        let _v6 = p.connect(ip("::1")).unwrap();
        drop(held);
        assert!(p.connect(ip("127.0.0.2")).is_ok(), "a connection given back is free again");
    }

    #[test]
    fn one_ipv6_64_is_one_address_and_a_mapped_ipv4_is_its_ipv4() {
        let p = peers();
        let _held: Vec<_> = (1..=3).map(|i| p.connect(ip(&format!("2001:db8:7:9::{i}"))).unwrap()).collect();
        assert_eq!(p.connect(ip("2001:db8:7:9:ffff::1")).unwrap_err().code, Code::TooManyConnectionsFromAddress, "the same /64");
        assert!(p.connect(ip("2001:db8:7:a::1")).is_ok(), "the next /64 is another client");
        let _v4: Vec<_> = (0..3).map(|_| p.connect(ip("10.0.0.1")).unwrap()).collect();
        assert!(p.connect(ip("::ffff:10.0.0.1")).is_err(), "an IPv4-mapped address is the IPv4 address");
    }

    #[test]
    fn bodies_waited_for_are_capped_per_address_and_come_back_on_drop() {
        let p = peers();
        let a = p.connect(ip("192.0.2.1")).unwrap();
        let b = p.connect(ip("192.0.2.1")).unwrap();
        let first = a.body().unwrap();
        let _second = b.body().unwrap();
        let r = a.body().unwrap_err();
        assert_eq!((r.code, r.status()), (Code::TooManyBodiesFromAddress, 429));
        assert!(r.message.contains("max_bodies_per_address"), "{}", r.message);
        assert!(p.connect(ip("192.0.2.2")).unwrap().body().is_ok(), "another address has its own slots");
        drop(first);
        assert!(a.body().is_ok());
        assert_eq!(p.held(ip("192.0.2.1")).connections, 2);
    }

    #[test]
    fn the_table_holds_only_addresses_that_hold_something() {
        let p = Peers::new(Caps { connections: 2, bodies: 1 });
        for i in 0..10_000u32 {
            let c = p.connect(IpAddr::from(i.to_be_bytes())).unwrap();
            let _slot = c.body().unwrap();
            // A refused attempt leaves nothing either.
            let _ = p.connect(IpAddr::from((i + 1_000_000).to_be_bytes())).map(|c| c.body());
        }
        assert_eq!(p.addresses(), 0, "ten thousand addresses came and went; none is kept");
        let open: Vec<_> = (0..50u32).map(|i| p.connect(IpAddr::from((i << 8).to_be_bytes())).unwrap()).collect();
        assert_eq!(p.addresses(), open.len(), "one entry per address with a connection open");
        drop(open);
        assert_eq!(p.addresses(), 0);
    }

    #[test]
    fn many_threads_never_pass_an_address_cap() {
        let p = Peers::new(Caps { connections: 4, bodies: 2 });
        let peak = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                let (p, peak) = (&p, &peak);
                s.spawn(move || {
                    for _ in 0..2000 {
                        if let Ok(c) = p.connect(ip("198.51.100.9")) {
                            let _slot = c.body();
                            let h = p.held(ip("198.51.100.9"));
                            assert!(h.connections <= 4 && h.bodies <= 2, "{h:?}");
                            peak.fetch_max(h.connections, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(p.addresses(), 0);
        assert!(peak.into_inner() <= 4);
    }
}
