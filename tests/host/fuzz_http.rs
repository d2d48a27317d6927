//! Fuzzing the router and the REST component over real HTTP (proptest,
//! shrinking): JSON-RPC shaped bodies with random methods, ids, params and
//! batches, plain garbage, random bodies on the REST routes, and the front
//! door's refusals (headers, origins, tokens, identities, sizes, paths on
//! every entry). No answer is ever a 5xx (a component failing is a host
//! bug, not the caller's), a JSON-RPC error carries a code from the spec,
//! and a door refusal names a code of its closed set. `CAIRN_FUZZ_CASES`
//! cases per target (default 300).
use crate::app::*;
use crate::harness::Cairn;
use proptest::prelude::*;
use serde_json::{Value, json};

fn cases() -> u32 {
    std::env::var("CAIRN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)
}

/// A host and a note to aim at, for every case of one target.
fn host() -> (Cairn, String, String) {
    let cairn = start_with(vec![("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "100000000")], vec![]);
    let token = cairn.token(&person());
    let note = cairn.create_note(&person(), "Fuzzed over HTTP", true);
    (cairn, token, note)
}

/// Runs `check` on `cases()` values of `strategy`, shrinking a failure.
fn fuzz<S: Strategy>(strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: cases(), ..ProptestConfig::default() });
    if let Err(e) = runner.run(&strategy, check) {
        panic!("{e}");
    }
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::from),
        prop_oneof![Just("tools/call"), Just("tools/list"), Just("initialize"), Just("resources/read"), Just("2.0"), Just("edit_note_tab")]
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 20, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("jsonrpc".to_string()),
                    Just("id".to_string()),
                    Just("method".to_string()),
                    Just("params".to_string()),
                    Just("name".to_string()),
                    Just("arguments".to_string()),
                    Just("uri".to_string()),
                    Just("_meta".to_string()),
                    "[a-z]{1,8}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON-RPC message with random parts, a batch of them, or anything.
fn message() -> impl Strategy<Value = Value> {
    (value(), prop_oneof![Just(json!("tools/call")), Just(json!("resources/read")), Just(json!("initialize")), value()], value())
        .prop_map(|(id, method, params)| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn mcp_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        message().prop_map(|m| m.to_string().into_bytes()),
        proptest::collection::vec(message(), 0..12).prop_map(|b| Value::from(b).to_string().into_bytes()),
        value().prop_map(|v| v.to_string().into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..200),
    ]
}

fn no_5xx(status: u16, what: &str, body: &str) -> Result<(), TestCaseError> {
    prop_assert!(status < 500, "{what} answered {status}: {body}");
    Ok(())
}

#[test]
fn no_body_on_mcp_gets_a_5xx_and_every_json_rpc_error_has_a_spec_code() {
    let (cairn, token, _) = host();
    let auth = format!("Bearer {token}");
    fuzz(mcp_body(), |body| {
        let r = cairn.request("POST", "/mcp", &[("authorization", &auth), ("content-type", "application/json")], &body);
        no_5xx(r.status, "/mcp", &r.text())?;
        if let Ok(v) = serde_json::from_slice::<Value>(&r.body) {
            let errors: Vec<&Value> = match &v {
                Value::Array(a) => a.iter().collect(),
                one => vec![one],
            };
            for e in errors.iter().filter_map(|m| m.get("error")).filter(|e| e.get("code").is_some()) {
                let code = e["code"].as_i64().unwrap_or(0);
                prop_assert!([-32700, -32600, -32601, -32602, -32002].contains(&code), "{code}: {v}");
            }
        }
        Ok(())
    });
}

#[test]
fn no_body_on_the_rest_routes_gets_a_5xx() {
    let (cairn, token, note) = host();
    let auth = format!("Bearer {token}");
    let routes = [
        ("POST", "/api/v1/notes".to_string()),
        ("PATCH", format!("/api/v1/notes/{note}")),
        ("PUT", format!("/api/v1/notes/{note}/tabs/markdown")),
        ("POST", format!("/api/v1/notes/{note}/tabs/markdown/merge")),
        ("POST", format!("/api/v1/notes/{note}/tabs/markdown/restore")),
        ("POST", format!("/api/v1/notes/{note}/sources")),
    ];
    fuzz((0..routes.len(), value(), any::<bool>()), |(route, body, raw)| {
        let (method, path) = &routes[route];
        let bytes: Vec<u8> = if raw { body.to_string().into_bytes().into_iter().rev().collect() } else { body.to_string().into_bytes() };
        let r = cairn.request(method, path, &[("authorization", &auth), ("content-type", "application/json")], &bytes);
        no_5xx(r.status, path, &r.text())
    });
}

/// What an anonymous caller may vary at the door.
fn door_request() -> impl Strategy<Value = (usize, String, Vec<(String, String)>, Vec<u8>)> {
    let path = prop_oneof![
        Just("/mcp".to_string()),
        Just("/api/v1/notes".to_string()),
        Just("/tools/edit_note_tab".to_string()),
        Just("/healthz".to_string()),
        Just("/".to_string()),
        "/[a-z/]{0,40}".prop_map(|p| p),
        "[a-z]{1,2000}".prop_map(|p| format!("/tools/{p}")),
    ];
    let header = prop_oneof![
        "[ -~]{0,9000}".prop_map(|v| ("origin".to_string(), v)),
        "[ -~]{0,9000}".prop_map(|v| ("authorization".to_string(), format!("Bearer {v}"))),
        "[ -~]{0,200}".prop_map(|v| ("cairn-identity".to_string(), v)),
        "[a-z]{1,20}".prop_flat_map(|n| "[ -~]{0,9000}".prop_map(move |v| (format!("x-{n}"), v))),
    ];
    (0..3usize, path, proptest::collection::vec(header, 0..4), proptest::collection::vec(any::<u8>(), 0..300))
}

#[test]
fn door_refusals_of_any_shape_are_never_a_5xx_and_name_a_code_of_the_door() {
    let (cairn, _, _) = host();
    fuzz(door_request(), |(method, path, headers, body)| {
        let method = ["GET", "POST", "PUT"][method];
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let r = cairn.request(method, &path, &h, &body);
        no_5xx(r.status, &path, &r.text())?;
        if let Some(code) = r.header(cairn_door::refusal::REFUSED_HEADER) {
            prop_assert!(cairn_door::Code::parse(code).is_some(), "{path}: unknown refusal code {code}");
            let body = r.json();
            prop_assert_eq!(body["error"].as_str(), Some(code), "{}: the body names the header's code", path);
        }
        Ok(())
    });
}
