//! One front door stands before every route of the application: every
//! route `spin.toml` gives a component answers an oversized header with the
//! door's own refusal (`cairn-refused: header_too_large`), a code only
//! `cairn-door` produces; the host's own limits come first and answer the
//! same way.
use crate::app::*;
use crate::harness::*;

/// A path each route of the manifest serves.
fn paths() -> Vec<(String, String)> {
    let manifest = cairn::manifest::Manifest::load(&root().join("spin.toml")).unwrap();
    let mut out = Vec::new();
    for c in &manifest.components {
        for r in &c.routes {
            let path = match r {
                cairn::manifest::Route::Exact(p) if p.is_empty() => "/".to_string(),
                cairn::manifest::Route::Exact(p) => p.clone(),
                cairn::manifest::Route::Wildcard(p) => format!("{}/door-probe", p.trim_end_matches('/')),
                cairn::manifest::Route::Private => continue,
            };
            out.push((c.id.clone(), path));
        }
    }
    assert!(out.len() > 15, "the manifest routes every tool and entry: {out:?}");
    out
}

#[test]
fn every_route_in_the_manifest_passes_through_the_front_door() {
    // Tools called over HTTP, so their public routes are open too.
    let cairn = start_with(vec![("SPIN_VARIABLE_TOOL_TRANSPORT", "http")], vec![]);
    let big = "x".repeat(9_000);
    for (component, path) in paths() {
        for method in ["GET", "POST"] {
            let r = cairn.request(method, &path, &[("x-door-probe", &big)], b"");
            assert_eq!(r.status, 431, "{method} {path} ({component}): {}", r.text());
            assert_eq!(r.header(cairn_door::refusal::REFUSED_HEADER), Some("header_too_large"), "{method} {path} ({component})");
            assert_eq!(r.json()["error"], "header_too_large");
        }
    }
}

#[test]
fn the_host_refuses_a_declared_body_over_the_limit_before_reading_it() {
    let cairn = start_with(vec![("SPIN_VARIABLE_MAX_BODY_BYTES", "1000")], vec![]);
    // A body that never comes: answered at once on its declared size.
    let mut s = std::net::TcpStream::connect(cairn.addr).unwrap();
    use std::io::{Read, Write};
    s.write_all(format!("POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-length: 999999999\r\nconnection: close\r\n\r\n", cairn.addr).as_bytes()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("body_too_large"), "{raw}");
}

#[test]
fn an_over_budget_subject_and_a_throttled_address_are_counted_by_code_in_the_metrics() {
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "door-metrics"), ("SPIN_VARIABLE_REFUSED_PER_MINUTE", "3")], vec![]);
    // Refusals are counted per minute of the clock: six requests that
    // straddle a minute's end would be counted in two budgets.
    let into_minute = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() % 60;
    if into_minute >= 55 {
        std::thread::sleep(std::time::Duration::from_secs(61 - into_minute));
    }
    for _ in 0..6 {
        cairn.request("POST", "/mcp", &[("authorization", "Bearer nope")], b"{}");
    }
    // Scraped from another address: this one is throttled, and refused unheard at every door.
    let text = crate::sources::request_from("127.0.0.2", cairn.addr, "GET", "/metrics", &[("authorization", "Bearer door-metrics")], b"").text();
    let count = |code: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(&format!("cairn_refusals_total{{code=\"{code}\"}}")))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    };
    assert_eq!(count("unauthorized"), 3.0, "{text}");
    assert_eq!(count("too_many_refusals"), 3.0, "{text}");
}
