//! A secret cannot be guessed faster than the address budget allows, at
//! any door: a wrong metrics token (`/metrics`, in the host), a wrong
//! operator token (the sweep route, in the REST component) and a forged
//! tool identity (`/tools/<tool>`, in a tool component) are refusals
//! counted against the client address, which past `refused_per_minute` is
//! refused unheard (429), whatever it sends; another address is served.
use crate::app::*;
use crate::harness::*;
use crate::sources::*;
use serde_json::json;

/// `refused_per_minute` for the host and the REST component.
const LIMIT: &str = "5";

/// Guesses from `127.0.0.2` until one is answered 429 (at most `attempts`,
/// enough for the budget twice over, should a minute end on the way);
/// every answer before it must be `401`. Panics when none is throttled.
fn guess_until_throttled(attempts: usize, mut guess: impl FnMut(usize) -> Reply) {
    let mut answered = Vec::new();
    for i in 0..attempts {
        let r = guess(i);
        answered.push(r.status);
        if r.status == 429 {
            assert_eq!(r.json()["error"], "too_many_refusals", "{}", r.text());
            assert!(answered[..answered.len() - 1].iter().all(|s| *s == 401), "{answered:?}");
            return;
        }
    }
    panic!("{attempts} wrong guesses from one address were never throttled: {answered:?}");
}

#[test]
fn wrong_metrics_tokens_are_counted_against_the_address_and_another_address_is_served() {
    let cairn = start_with(vec![("SPIN_VARIABLE_METRICS_TOKEN", "metrics-secret"), ("SPIN_VARIABLE_REFUSED_PER_MINUTE", LIMIT)], vec![]);
    let get = |source: &str, token: &str| request_from(source, cairn.addr, "GET", "/metrics", &[("authorization", &format!("Bearer {token}"))], b"");
    guess_until_throttled(30, |i| get("127.0.0.2", &format!("guess-{i}")));
    assert_eq!(get("127.0.0.2", "metrics-secret").status, 429, "a throttled address is refused unheard, even with the right token");
    let served = get("127.0.0.1", "metrics-secret");
    assert_eq!(served.status, 200, "{}", served.text());
    assert!(served.text().contains("cairn_refusals_total{code=\"unauthorized\"}"), "{}", served.text());
}

#[test]
fn wrong_operator_tokens_at_the_sweep_route_are_counted_against_the_address() {
    let cairn = start_with(vec![("SPIN_VARIABLE_SWEEP_TOKEN", "ops-secret"), ("SPIN_VARIABLE_REFUSED_PER_MINUTE", LIMIT)], vec![]);
    let sweep = |source: &str, token: &str| {
        request_from(source, cairn.addr, "POST", "/api/v1/sweep-claims?tenant=acme", &[("authorization", &format!("Bearer {token}"))], b"")
    };
    guess_until_throttled(30, |i| sweep("127.0.0.2", &format!("guess-{i}")));
    assert_eq!(sweep("127.0.0.2", "ops-secret").status, 429, "a throttled address is refused unheard, even with the right token");
    let served = sweep("127.0.0.1", "ops-secret");
    assert_eq!(served.status, 200, "{}", served.text());
}

#[test]
fn forged_tool_identities_are_counted_against_the_address_and_calls_through_the_router_go_on() {
    // Tool components read the default budget (120 refusals a minute).
    let cairn = start_with(vec![("SPIN_VARIABLE_TOOL_TRANSPORT", "http")], vec![]);
    let forge = |source: &str, i: usize| {
        let identity = format!("v1.forged-{i}.{}", "a".repeat(40));
        request_from(source, cairn.addr, "POST", "/tools/read_note_tab", &[("cairn-identity", &identity), ("content-type", "application/json")], b"{}")
    };
    guess_until_throttled(2 * cairn_door::defaults::REFUSED_PER_MINUTE as usize + 1, |i| forge("127.0.0.2", i));
    assert_eq!(forge("127.0.0.3", 0).status, 401, "another address is heard");
    let note = cairn.create_note(&person(), "Still served", true);
    let read = cairn.call(&cairn.token(&agent()), "read_note_tab", json!({"note_id": note, "tab_id": "markdown"}));
    assert_eq!(read["isError"], false, "{read}");
}
