//! The router is an OAuth 2.1 resource server: every bad token is refused
//! with a challenge, scopes are enforced per tool, origins are checked first,
//! the subject's budget counts messages across its tokens and REST, and
//! refusals leave nothing durable until someone is known.
use crate::app::*;
use crate::harness::Reply;
use serde_json::{Value, json};

fn list(cairn: &crate::harness::Cairn, token: &str) -> Reply {
    cairn.mcp(token, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_notes", "arguments": {}}}))
}

fn assert_401(r: &Reply, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.text());
    let challenge = r.header("www-authenticate").unwrap_or_else(|| panic!("{what}: no challenge"));
    assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
    assert!(challenge.contains("resource_metadata=\"http://"), "{what}: {challenge}");
    assert!(challenge.contains("/.well-known/oauth-protected-resource/mcp\""), "{what}: {challenge}");
}

#[test]
fn missing_malformed_expired_foreign_and_unsigned_tokens_get_401() {
    let cairn = start();
    let auth_none = cairn.request("POST", "/mcp", &[], br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_401(&auth_none, "missing");
    assert!(!auth_none.header("www-authenticate").unwrap().contains("invalid_token"));
    assert_401(&list(&cairn, "not-a-jwt"), "malformed");

    let mut c = cairn.claims(&agent());
    c["exp"] = json!(1_000_000);
    c["nbf"] = json!(999_000);
    c["iat"] = json!(999_000);
    let r = list(&cairn, &key().sign(&c));
    assert_401(&r, "expired");
    assert!(r.header("www-authenticate").unwrap().contains("error=\"invalid_token\""));
    assert!(r.text().contains("expired"), "{}", r.text());

    let mut c = cairn.claims(&agent());
    c["aud"] = json!("https://some-other-resource.example/mcp");
    assert_401(&list(&cairn, &key().sign(&c)), "wrong audience");

    let mut c = cairn.claims(&agent());
    c["iss"] = json!("https://evil.example");
    assert_401(&list(&cairn, &key().sign(&c)), "wrong issuer");

    let mut c = cairn.claims(&agent());
    c["nbf"] = json!(c["iat"].as_u64().unwrap() + 3600);
    assert_401(&list(&cairn, &key().sign(&c)), "not yet valid");

    assert_401(&list(&cairn, &stranger().sign(&cairn.claims(&agent()))), "badly signed");
    assert_401(&list(&cairn, &cairn_auth::mint::unsigned(&cairn.claims(&agent()))), "alg none");

    // A signature from the trusted key, with the payload swapped afterwards.
    let good = cairn.token(&agent());
    let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
    let mut c = cairn.claims(&agent());
    c["tenant"] = json!("other-tenant");
    use base64::Engine;
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c.to_string());
    assert_401(&list(&cairn, &parts.join(".")), "tampered");
    assert_eq!(list(&cairn, &good).status, 200);
}

#[test]
fn a_missing_scope_gets_403_naming_it_and_nothing_runs() {
    let cairn = start();
    let person = person();
    let note = cairn.create_note(&person, "scoped", true);
    let mut reader = agent();
    reader.scope = "notes:read";
    let t = cairn.token(&reader);
    let tabs = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    let version = tabs["structuredContent"]["version"].as_u64().unwrap();
    let r = cairn.mcp(
        &t,
        &json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_note_tab", "arguments": {
                "note_id": note, "expected_version": version, "idempotency_key": "k", "tab_type": "sheet"}}}
        ]),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"notes:write\""), "{challenge}");
    let after = cairn.call(&t, "list_note_tabs", json!({"note_id": note}));
    assert_eq!(after["structuredContent"]["version"].as_u64().unwrap(), version);
}

#[test]
fn protected_resource_metadata_names_the_issuer_and_scopes() {
    let cairn = start();
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let m = cairn.get(path).json();
        assert_eq!(m["resource"], Value::String(cairn.audience()));
        assert_eq!(m["authorization_servers"][0], ISSUER);
        let scopes: Vec<&str> = m["scopes_supported"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        assert!(scopes.contains(&"notes:read") && scopes.contains(&"notes:write"));
    }
}

#[test]
fn a_browser_origin_off_the_allow_list_gets_403_before_the_token_is_read() {
    let cairn = start_with(vec![("SPIN_VARIABLE_ALLOWED_ORIGINS", "https://app.example")], vec![]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let evil = cairn.request("POST", "/mcp", &[("origin", "https://evil.example")], body);
    assert_eq!(evil.status, 403);
    assert_eq!(evil.json()["error"], "forbidden_origin");
    let t = cairn.token(&agent());
    let auth = format!("Bearer {t}");
    let ok = cairn.request("POST", "/mcp", &[("origin", "https://app.example"), ("authorization", &auth)], body);
    assert_eq!(ok.status, 200);
    // A cookie is never a credential.
    let cookie = cairn.request("POST", "/mcp", &[("cookie", &format!("token={t}"))], body);
    assert_eq!(cookie.status, 401);
}

#[test]
fn one_subject_has_one_budget_across_its_tokens_batches_and_rest() {
    // Six a minute: ten at once, then one every ten seconds.
    let cairn = start_with(vec![("SPIN_VARIABLE_RATE_LIMIT_PER_MINUTE", "6")], vec![]);
    let t = cairn.token(&agent());
    let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let r = cairn.mcp(&t, &json!([ping(1), ping(2), ping(3), ping(4)]));
    assert_eq!(r.status, 200);
    // A second token of the same subject (another expiry, so another token)
    // and a REST call draw on the same budget.
    let mut c = cairn.claims(&agent());
    c["exp"] = json!(c["exp"].as_u64().unwrap() + 60);
    let second = key().sign(&c);
    assert_ne!(second, t);
    assert_eq!(cairn.rest(&second, "GET", "/api/v1/notes", None).status, 200);
    assert_eq!(cairn.mcp(&second, &json!([ping(5), ping(6), ping(7), ping(8), ping(9)])).status, 200);
    let r = cairn.mcp(&second, &json!([ping(10)]));
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.json()["error"], "rate_limited");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(cairn.rest(&t, "GET", "/api/v1/notes", None).status, 429, "REST is the same budget");
    // Another subject has its own budget.
    let other = cairn.token(&person());
    assert_eq!(cairn.mcp(&other, &ping(1)).status, 200);
}

#[test]
fn refusals_before_a_token_leave_nothing_durable_and_a_scope_refusal_is_audited() {
    use cairn_kv::Store;
    let cairn = start_with(vec![("SPIN_VARIABLE_ALLOWED_ORIGINS", "https://app.example")], vec![]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for _ in 0..20 {
        assert_eq!(cairn.request("POST", "/mcp", &[("origin", "https://evil.example")], body).status, 403);
        assert_eq!(list(&cairn, "garbage").status, 401);
    }
    let mut reader = agent();
    reader.scope = "notes:read";
    cairn.mcp(&cairn.token(&reader), &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add_note_source", "arguments": {}}}));
    let state = cairn.state_dir.clone();
    let (status, log) = cairn.terminate();
    assert!(status.success(), "{log}");
    let store = cairn_kv_sqlite::SqliteStore::open(&state.join("kv.db"), false).unwrap();
    let all = store.list_keys("default", None, 10_000).unwrap();
    assert!(all.iter().all(|k| !k.starts_with("sys/")), "an anonymous refusal was written down: {all:?}");
    let tenant: Vec<&String> = all.iter().filter(|k| k.starts_with("t/acme/audit/refused/")).collect();
    assert_eq!(tenant.len(), 1, "the scope refusal is audited, once: {tenant:?}");
    let record: Value = serde_json::from_slice(&store.get("default", tenant[0]).unwrap().unwrap()).unwrap();
    assert_eq!((record["reason"].as_str(), record["scope"].as_str()), (Some("scope"), Some("notes:write")));
}

#[test]
fn es256_tokens_verify_against_an_ec_key_and_confused_algorithms_do_not() {
    use cairn_auth::mint::{EcKey, hmac_signed};
    let ec = EcKey::from_scalar([3u8; 32]);
    let ed = key();
    let jwks = json!({"keys": [ed.jwk(), ec.jwk()]}).to_string();
    let cairn = start_with(vec![("SPIN_VARIABLE_JWKS", Box::leak(jwks.into_boxed_str()))], vec![]);
    let claims = cairn.claims(&agent());
    assert_eq!(list(&cairn, &ec.sign(&claims)).status, 200, "ES256 token refused");
    assert_eq!(list(&cairn, &ed.sign(&claims)).status, 200, "EdDSA token refused");
    // HS256 "signed" with the public key material, naming each trusted kid.
    for (kid, material) in [(ed.kid.clone(), ed.jwk()["x"].as_str().unwrap().to_string()), (ec.kid.clone(), ec.jwk()["x"].as_str().unwrap().to_string())] {
        assert_401(&list(&cairn, &hmac_signed(material.as_bytes(), &kid, &claims)), "HS256 with a public key as secret");
    }
}

#[test]
fn an_unusable_jwks_is_the_servers_fault_500_not_the_callers_401() {
    let cairn = start_with(vec![("SPIN_VARIABLE_JWKS", r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#)], vec![]);
    let token = cairn.token(&agent());
    for r in [list(&cairn, &token), cairn.rest(&token, "GET", "/api/v1/notes", None)] {
        assert_eq!(r.status, 500, "{}", r.text());
        assert_eq!(r.json()["error"], "misconfigured", "{}", r.text());
        assert!(r.text().contains("symmetric"), "names what is wrong with the JWKS: {}", r.text());
    }
}
